//! The environment commands get: turn's own, minus what a model should not see or use.
//!
//! - Secret-looking variables: a name containing KEY, TOKEN, SECRET, PASSWORD, PASSWD or
//!   CREDENTIAL (in any case: `OPENAI_API_KEY`, `GITHUB_TOKEN`, `PGPASSWORD`), or a value with a
//!   password in a URL (`postgres://user:pw@host/db`, an authenticated proxy). A model could
//!   print them into its history or send them anywhere.
//! - Variables that lead to other programs' sockets: the terminal multiplexer (`TMUX`, `STY`,
//!   `ZELLIJ`), the SSH and GPG agents, the session bus, the display server, window managers,
//!   editors (`NVIM`, VS Code's IPC and askpass hooks), and any name ending in `_SOCK` or
//!   `_SOCKET`. Through them a command could type into the user's terminal, sign with their
//!   keys or run programs outside the sandbox.
//!
//! `--pass-env NAME` lets a withheld variable through. Pure: tested on plain lists.

use std::ffi::OsString;

const SECRET_WORDS: [&str; 6] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

const SOCKET_NAMES: [&str; 27] = [
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "XDG_RUNTIME_DIR",
    "KITTY_LISTEN_ON",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "VSCODE_GIT_ASKPASS_NODE",
    "VSCODE_GIT_ASKPASS_MAIN",
    "VSCODE_GIT_ASKPASS_EXTRA_ARGS",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "DOCKER_HOST",
    "PULSE_SERVER",
];

/// Whether a variable is kept from commands unless `--pass-env` names it.
pub fn withheld(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|word| upper.contains(word))
        || SOCKET_NAMES.contains(&upper.as_str())
        || upper.starts_with("DBUS_")
        || upper.ends_with("_SOCK")
        || upper.ends_with("_SOCKET")
        || has_url_password(value)
}

/// Whether `value` holds a URL with a password (`scheme://user:password@host`).
fn has_url_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        let authority = rest
            .split(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .next()
            .unwrap_or("");
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    })
}

/// The environment for commands: `vars` without the withheld ones, except those in `pass`.
pub fn for_commands(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    pass: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, value)| {
            let name = name.to_string_lossy();
            pass.iter().any(|p| *p == name) || !withheld(&name, &value.to_string_lossy())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(vars: &[(&str, &str)], pass: &[&str]) -> Vec<String> {
        let pass: Vec<String> = pass.iter().map(|p| p.to_string()).collect();
        let vars = vars.iter().map(|(n, v)| (n.into(), v.into()));
        for_commands(vars, &pass)
            .into_iter()
            .map(|(n, _)| n.into_string().unwrap())
            .collect()
    }

    #[test]
    fn secrets_are_withheld_by_name() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "PGPASSWORD",
            "MYSQL_PWD_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "npm_config_authtoken",
            "Secret",
        ] {
            assert!(withheld(name, "x"), "{name}");
        }
    }

    #[test]
    fn sockets_are_withheld() {
        for name in [
            "TMUX",
            "STY",
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "WAYLAND_DISPLAY",
            "DISPLAY",
            "NVIM",
            "WEZTERM_UNIX_SOCKET",
            "VSCODE_IPC_HOOK_CLI",
            "GIT_ASKPASS",
        ] {
            assert!(withheld(name, "x"), "{name}");
        }
    }

    #[test]
    fn passwords_in_urls_are_withheld() {
        assert!(withheld(
            "DATABASE_URL",
            "postgres://app:hunter2@db:5432/app"
        ));
        assert!(withheld("HTTPS_PROXY", "http://me:pw@proxy:3128"));
        assert!(withheld("MIXED", "see x and https://u:p@h/path"));
        assert!(!withheld("HTTPS_PROXY", "http://proxy:3128"));
        assert!(!withheld("REPO", "https://user@github.com/a/b"));
        assert!(!withheld("NOTE", "https://h/a:b@c"), "the @ is in the path");
    }

    #[test]
    fn ordinary_variables_pass() {
        let vars = [
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("LANG", "C.UTF-8"),
            ("TERM", "xterm"),
            ("CARGO_HOME", "/root/.cargo"),
            ("GIT_AUTHOR_NAME", "A"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
            ("TURN_MODEL", "m"),
        ];
        assert_eq!(kept(&vars, &[]).len(), vars.len());
    }

    #[test]
    fn pass_env_lets_one_through() {
        let vars = [
            ("OPENAI_API_KEY", "sk-1"),
            ("GITHUB_TOKEN", "g"),
            ("TMUX", "/t"),
        ];
        assert_eq!(kept(&vars, &["GITHUB_TOKEN"]), ["GITHUB_TOKEN"]);
        assert_eq!(
            kept(&vars, &["TMUX", "OPENAI_API_KEY"]),
            ["OPENAI_API_KEY", "TMUX"]
        );
        assert!(kept(&vars, &["github_token"]).is_empty(), "names are exact");
    }
}
