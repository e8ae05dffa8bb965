//! Protected paths: what in the workspace runs outside the sandbox later, so commands and the
//! file tools must not change it. Every `.git` (a repository's directory, or the file a
//! submodule or worktree has instead) present when the run starts, nested ones included, and
//! `.turn` (turn's own sessions and tools file). A `.git/config` or a hook written by the
//! model would run at the user's next `git status`.
//!
//! `scan` walks the workspace once, breadth first and bounded; `covers` is pure.

use std::path::{Path, PathBuf};

/// Directories looked into at most: a huge tree is cut, and the run says so.
const MAX_DIRS: usize = 50_000;
/// Protected paths at most (each is a mount inside the namespaces).
const MAX_PATHS: usize = 48;

/// What a scan found.
#[derive(Debug, Default, PartialEq)]
pub struct Scan {
    /// Canonical paths, shallowest first.
    pub paths: Vec<PathBuf>,
    /// The walk stopped early (too many directories or too many `.git`).
    pub cut: bool,
}

/// The protected paths in `workspace` (canonical), with `extra` ones (canonical paths turn
/// keeps inside it, like its vouching records) where they exist. Symlinks are not followed.
pub fn scan(workspace: &Path, extra: &[PathBuf]) -> Scan {
    let mut found = Scan::default();
    let turn = workspace.join(".turn");
    for path in std::iter::once(&turn).chain(extra) {
        if path.starts_with(workspace) && std::fs::symlink_metadata(path).is_ok() {
            found.paths.push(path.clone());
        }
    }
    // Breadth first, a level at a time: shallow repositories are found before a cut.
    let mut level = vec![workspace.to_path_buf()];
    let mut seen = 0;
    while !level.is_empty() {
        let mut next = Vec::new();
        for dir in level {
            seen += 1;
            if seen > MAX_DIRS {
                found.cut = true;
                return found;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if entry.file_name() == ".git" && !kind.is_symlink() {
                    if found.paths.len() >= MAX_PATHS {
                        found.cut = true;
                        return found;
                    }
                    found.paths.push(path);
                } else if kind.is_dir() && path != turn {
                    next.push(path);
                }
            }
        }
        level = next;
    }
    found
}

/// Whether `path` (resolved, absolute) is a protected path or lies beneath one.
pub fn covers(protected: &[PathBuf], path: &Path) -> bool {
    protected.iter().any(|p| path.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_the_paths_and_what_is_beneath_by_whole_names() {
        let list = [PathBuf::from("/w/.git"), PathBuf::from("/w/sub/.git")];
        for path in ["/w/.git", "/w/.git/hooks/pre-commit", "/w/sub/.git"] {
            assert!(covers(&list, Path::new(path)), "{path}");
        }
        for path in ["/w/.gitignore", "/w/.github/x", "/w/sub/a.rs", "/w"] {
            assert!(!covers(&list, Path::new(path)), "{path}");
        }
    }

    #[test]
    fn scan_finds_nested_repositories_submodules_and_turn() {
        let root = std::env::temp_dir().join(format!("turn-protect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in [".git/hooks", "lib/inner/.git", "deep/a/b/.git", ".turn"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        let root = root.canonicalize().unwrap();
        let mut found = scan(&root, &[root.join("missing")]);
        found.paths.sort();
        let rel: Vec<_> = found
            .paths
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            rel,
            [
                ".git",
                ".turn",
                "deep/a/b/.git",
                "lib/inner/.git",
                "sub/.git"
            ]
        );
        assert!(!found.cut);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
