//! Where turn keeps state of its own outside any workspace: `$XDG_STATE_HOME/turn`, by
//! default `~/.local/state/turn`. Each concern keeps a subdirectory of its own there.

use std::path::PathBuf;

/// The state directory (not created here); `None` without a usable `XDG_STATE_HOME` or
/// `HOME`. A relative `XDG_STATE_HOME` is ignored, as the XDG spec says.
pub fn dir() -> Option<PathBuf> {
    // Unit tests keep their records out of the real state directory.
    #[cfg(test)]
    return Some(std::env::temp_dir().join(format!("turn-unit-state-{}", std::process::id())));
    #[cfg(not(test))]
    from(
        std::env::var_os("XDG_STATE_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

fn from(state_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    let base = match state_home.filter(|p| p.is_absolute()) {
        Some(dir) => dir,
        None => home.filter(|p| p.is_absolute())?.join(".local/state"),
    };
    Some(base.join("turn"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_state_home_first_then_home() {
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(from(p("/s"), p("/h")), p("/s/turn"));
        assert_eq!(from(None, p("/h")), p("/h/.local/state/turn"));
        assert_eq!(from(p("rel"), p("/h")), p("/h/.local/state/turn"));
        assert_eq!(from(None, None), None);
        assert_eq!(from(None, p("")), None);
    }
}
