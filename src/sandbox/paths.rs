//! `safe_path`: keeps file tools inside the workspace by resolving a path the way the kernel
//! would, every symlink followed.
//!
//! Pure: the filesystem is seen only through the `lookup` function the caller passes, so every
//! symlink trick can be tested with a table.

use std::path::{Component, Path, PathBuf};

/// What the filesystem holds at a path, as far as path resolution cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Missing,
    /// A file or directory: anything that is not a symlink.
    Entry,
    /// A symlink and its target, as `readlink` gives it.
    Link(PathBuf),
}

/// Symlink hops allowed before a path counts as a loop (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Resolves `path` (relative to `workspace`, which must be canonical) the way the kernel would:
/// `.` and `..` in order, every symlink followed, also dangling ones (a write through one
/// would land at its target), and parts that do not exist yet kept as written. Err names the
/// path when the result lies outside the workspace.
pub fn safe_path(
    workspace: &Path,
    path: &str,
    lookup: impl Fn(&Path) -> Node,
) -> Result<PathBuf, String> {
    let escape = || format!("Path escapes workspace: {path}");
    if path.is_empty() {
        return Err("Path is empty".into());
    }
    let mut resolved = PathBuf::from("/");
    let mut pending: Vec<PathBuf> = vec![workspace.join(path)];
    let mut hops = 0;
    // A stack of paths still to walk: a symlink pushes its target in front of what remains.
    while let Some(next) = pending.pop() {
        let mut parts = next.components();
        while let Some(part) = parts.next() {
            match part {
                Component::RootDir | Component::Prefix(_) => resolved = PathBuf::from("/"),
                Component::CurDir => {}
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::Normal(name) => {
                    let candidate = resolved.join(name);
                    match lookup(&candidate) {
                        Node::Link(target) => {
                            hops += 1;
                            if hops > MAX_LINKS {
                                return Err(format!("Too many levels of symbolic links: {path}"));
                            }
                            pending.push(parts.as_path().to_path_buf());
                            pending.push(target);
                            break;
                        }
                        Node::Entry | Node::Missing => resolved = candidate,
                    }
                }
            }
        }
    }
    if resolved.starts_with(workspace) {
        Ok(resolved)
    } else {
        Err(escape())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A fake filesystem: the listed paths exist; `-> target` entries are symlinks.
    fn fs(entries: &[(&str, Option<&str>)]) -> impl Fn(&Path) -> Node {
        let map: HashMap<PathBuf, Node> = entries
            .iter()
            .map(|(path, link)| {
                let node = link.map_or(Node::Entry, |t| Node::Link(PathBuf::from(t)));
                (PathBuf::from(path), node)
            })
            .collect();
        move |p: &Path| map.get(p).cloned().unwrap_or(Node::Missing)
    }

    fn ws() -> &'static Path {
        Path::new("/ws")
    }

    fn world() -> impl Fn(&Path) -> Node {
        fs(&[
            ("/ws", None),
            ("/ws/src", None),
            ("/ws/src/main.rs", None),
            ("/ws/out", Some("/etc")), // symlinked directory leaving the workspace
            ("/ws/passwd", Some("/etc/passwd")), // symlinked file leaving it
            ("/ws/dangling", Some("/etc/newfile")), // dangling link: a write would create /etc/newfile
            ("/ws/inside", Some("src")),            // relative link staying inside
            ("/ws/up", Some("../ws/src")),          // leaves and comes back
            ("/ws/loop", Some("/ws/loop")),
            ("/etc", None),
            ("/etc/passwd", None),
        ])
    }

    #[test]
    fn paths_inside_resolve() {
        let ok = |p: &str| safe_path(ws(), p, world()).unwrap();
        assert_eq!(ok("src/main.rs"), Path::new("/ws/src/main.rs"));
        assert_eq!(ok("./src/../src/main.rs"), Path::new("/ws/src/main.rs"));
        assert_eq!(
            ok("/ws/new/dir/file.txt"),
            Path::new("/ws/new/dir/file.txt")
        );
        assert_eq!(ok("inside/main.rs"), Path::new("/ws/src/main.rs"));
        assert_eq!(ok("up/main.rs"), Path::new("/ws/src/main.rs"));
        assert_eq!(ok("."), Path::new("/ws"));
    }

    #[test]
    fn escapes_are_rejected() {
        for path in [
            "../x",
            "src/../../etc/passwd",
            "/etc/passwd",
            "/",
            "missing/../../etc",
            "out/passwd",
            "out/../../x",
            "passwd",
            "dangling",
            "/ws/../ws2/file",
        ] {
            assert_eq!(
                safe_path(ws(), path, world()),
                Err(format!("Path escapes workspace: {path}")),
                "{path}"
            );
        }
    }

    #[test]
    fn a_sibling_with_a_common_prefix_is_outside() {
        let lookup = fs(&[("/ws", None), ("/ws2", None)]);
        assert!(safe_path(ws(), "/ws2/x", lookup).is_err());
    }

    #[test]
    fn symlink_loops_and_empty_paths_are_errors() {
        assert!(safe_path(ws(), "loop", world())
            .unwrap_err()
            .contains("symbolic links"));
        assert_eq!(safe_path(ws(), "", world()), Err("Path is empty".into()));
    }
}
