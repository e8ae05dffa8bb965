//! Build script: stamps the binary with what `turn --version` prints beyond the crate version —
//! the target triple, the git commit and the build date — as `TURN_LONG_VERSION`.
//!
//! No crates: the commit comes from `git rev-parse` ("unknown" outside a git checkout or without
//! git), the date from `SOURCE_DATE_EPOCH` when set (reproducible builds; `make dist` sets it to
//! the commit's time) or else today's date, in UTC. The script reruns only when HEAD moves or
//! `SOURCE_DATE_EPOCH` changes, so ordinary edits do not rebuild it.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-changed=build.rs");
    // HEAD names the branch; the branch's ref file (or packed-refs) moves with each commit.
    // Only files that exist: cargo reruns the script on every build for a missing one.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for path in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(file) = git(&["rev-parse", "--git-path", path]) {
            if std::path::Path::new(&file).exists() {
                println!("cargo:rerun-if-changed={file}");
            }
        }
    }
    let epoch = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(value) if !value.trim().is_empty() => value.trim().parse::<i64>().unwrap_or_else(|_| {
            panic!("SOURCE_DATE_EPOCH must be whole seconds since 1970, not '{value}'")
        }),
        _ => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    let (year, month, day) = civil_date(epoch.div_euclid(86_400));
    println!(
        "cargo:rustc-env=TURN_LONG_VERSION={} ({target}, commit {commit}, built {year:04}-{month:02}-{day:02})",
        env!("CARGO_PKG_VERSION")
    );
}

/// Runs git in the crate's directory; its trimmed stdout, or None when git fails or is absent.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let out = Command::new("git")
        .args(args)
        .current_dir(&dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    if !out.status.success() || text.is_empty() {
        return None;
    }
    // --git-path answers relative to the working directory.
    if args.first() == Some(&"rev-parse") && args.get(1) == Some(&"--git-path") {
        return Some(std::path::Path::new(&dir).join(text).display().to_string());
    }
    Some(text)
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
