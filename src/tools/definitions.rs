//! Python definitions an answer shows, put where they belong. Small models answer a "fix it"
//! task with the fixed function in a code block instead of an edit (measured on
//! Qwen2.5-Coder-1.5B: "Here's the corrected code:" and `def count_words(text): ...`, then
//! "run the tests again"). When every top-level `def` or `class` of the block is defined at
//! the top level of the file exactly once, `splice` puts the block's definitions in place of
//! the file's; anything else in the block must be a comment or an import the file already
//! has, so an example call or a new statement never lands in the file unasked.
//!
//! Pure: text in, text out. Which file to try is the caller's choice (see agent.rs).

/// A top-level definition: its name and its lines, `[start, end)`, decorators included,
/// blank lines after it excluded.
#[derive(Debug, PartialEq)]
struct Def<'a> {
    name: &'a str,
    start: usize,
    end: usize,
}

/// The name a line defines at the top level (`def f(`, `async def f(`, `class C:`).
fn defined(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("def ")
        .or_else(|| line.strip_prefix("async def "))
        .or_else(|| line.strip_prefix("class "))?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    let name = &rest[..end];
    let next = rest[end..].chars().next()?;
    (!name.is_empty() && matches!(next, '(' | ':')).then_some(name)
}

/// Whether a line ends what stands above it at the top level: not blank, not indented, and
/// not the closing bracket of a signature written over several lines.
fn top_level(line: &str) -> bool {
    !line.trim().is_empty() && !line.starts_with([' ', '\t']) && !line.starts_with([')', ']', '}'])
}

fn defs<'a>(lines: &[&'a str]) -> Vec<Def<'a>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = defined(lines[i]) else {
            i += 1;
            continue;
        };
        let mut start = i;
        while start > 0 && lines[start - 1].starts_with('@') {
            start -= 1;
        }
        let mut end = i + 1;
        while end < lines.len() && !top_level(lines[end]) {
            end += 1;
        }
        let next = end;
        while end > i + 1 && lines[end - 1].trim().is_empty() {
            end -= 1;
        }
        out.push(Def { name, start, end });
        i = next;
    }
    out
}

/// `file` with the top-level definitions of `block` put in place of its own of the same
/// names; `None` when the block defines nothing, a name the file does not define exactly
/// once, holds anything but definitions, comments and imports the file has, or changes
/// nothing.
pub fn splice(file: &str, block: &str) -> Option<String> {
    let file_lines: Vec<&str> = file.lines().collect();
    let block_lines: Vec<&str> = block.lines().collect();
    let new_defs = defs(&block_lines);
    if new_defs.is_empty() {
        return None;
    }
    // Every block line outside its definitions is blank, a comment, or an import the file has.
    let inside = |i: usize| new_defs.iter().any(|d| (d.start..d.end).contains(&i));
    let stray = block_lines.iter().enumerate().any(|(i, line)| {
        let text = line.trim();
        !inside(i)
            && !text.is_empty()
            && !text.starts_with('#')
            && !((text.starts_with("import ") || text.starts_with("from "))
                && file_lines.iter().any(|l| l.trim() == text))
    });
    if stray {
        return None;
    }
    let old_defs = defs(&file_lines);
    let mut places: Vec<(&Def, &Def)> = Vec::new();
    for new in &new_defs {
        let mut same = old_defs.iter().filter(|d| d.name == new.name);
        match (same.next(), same.next()) {
            (Some(old), None) if !places.iter().any(|(o, _)| o.name == old.name) => {
                places.push((old, new))
            }
            _ => return None,
        }
    }
    places.sort_by_key(|(old, _)| old.start);
    let mut out: Vec<&str> = Vec::with_capacity(file_lines.len() + block_lines.len());
    let mut at = 0;
    for (old, new) in places {
        out.extend(&file_lines[at..old.start]);
        out.extend(&block_lines[new.start..new.end]);
        at = old.end;
    }
    out.extend(&file_lines[at..]);
    let mut text = out.join("\n");
    if file.ends_with('\n') || file.is_empty() {
        text.push('\n');
    }
    (text != file).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\"\"\"Word statistics.\"\"\"\nimport re\n\n\ndef count_words(text):\n    \"\"\"Words.\"\"\"\n    return len(text.split(\" \"))\n\n\ndef longest_word(text):\n    words = text.split()\n    return max(words, key=len) if words else \"\"\n";

    #[test]
    fn a_fixed_function_replaces_the_old_one_and_nothing_else() {
        let block = "def count_words(text):\n    # any whitespace\n    return len(text.split())\n";
        let out = splice(FILE, block).unwrap();
        assert_eq!(
            out,
            FILE.replace(
                "    \"\"\"Words.\"\"\"\n    return len(text.split(\" \"))",
                "    # any whitespace\n    return len(text.split())"
            )
        );
    }

    #[test]
    fn several_definitions_comments_and_known_imports_are_fine() {
        let block = "import re\n# fixed\n\ndef longest_word(text):\n    return \"\"\n\ndef count_words(text):\n    return 0\n";
        let out = splice(FILE, block).unwrap();
        assert!(out.contains("def count_words(text):\n    return 0\n\n\ndef longest_word(text):\n    return \"\"\n"), "{out}");
        assert!(out.starts_with("\"\"\"Word statistics.\"\"\"\nimport re\n\n\n"));
    }

    #[test]
    fn anything_else_in_the_block_is_no_splice() {
        let call = "def count_words(text):\n    return 0\n\nprint(count_words(''))\n";
        assert_eq!(splice(FILE, call), None, "an example call");
        let import = "import os\ndef count_words(text):\n    return 0\n";
        assert_eq!(splice(FILE, import), None, "a new import");
        let unknown = "def count_lines(text):\n    return 0\n";
        assert_eq!(
            splice(FILE, unknown),
            None,
            "a name the file does not define"
        );
        assert_eq!(splice(FILE, "x = 1\n"), None, "no definition");
        let twice = format!("{FILE}\ndef count_words(t):\n    return 1\n");
        assert_eq!(splice(&twice, "def count_words(t):\n    return 2\n"), None);
        let same = "def longest_word(text):\n    words = text.split()\n    return max(words, key=len) if words else \"\"\n";
        assert_eq!(splice(FILE, same), None, "no change");
    }

    #[test]
    fn decorators_methods_and_long_signatures_stay_with_their_definition() {
        let file = "class A:\n    def f(self):\n        return 1\n\n\n@cache\ndef g(\n    x,\n):\n    return x\n\n\nMAIN = 1\n";
        let out = splice(file, "@cache\ndef g(\n    x,\n):\n    return -x\n").unwrap();
        assert_eq!(out, file.replace("    return x\n", "    return -x\n"));
        let out = splice(file, "class A:\n    def f(self):\n        return 2\n").unwrap();
        assert!(out.starts_with("class A:\n    def f(self):\n        return 2\n\n\n@cache"));
        assert!(out.ends_with("MAIN = 1\n"));
        // A method alone is not top-level: no splice.
        assert_eq!(splice(file, "    def f(self):\n        return 3\n"), None);
    }
}
