//! Capabilities, dropped for good before a command runs: the bounding set emptied, the
//! securebits locked so uid 0 gains nothing at exec, the ambient, permitted and effective sets
//! cleared, and `no_new_privs` set so neither setuid programs nor file capabilities give any
//! back. Without capabilities a command cannot remount, mknod devices, chown, change the
//! hostname or the network, even as root inside its user namespace.
//!
//! Each step is one system call, so `drop_all` is safe between fork and exec.

use super::sys::{self, prctl, syscall, Failed};
use std::os::raw::{c_int, c_long};

const PR_CAPBSET_DROP: c_int = 24;
const PR_SET_SECUREBITS: c_int = 28;
const PR_CAP_AMBIENT: c_int = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: c_long = 4;
/// NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED and NO_CAP_AMBIENT_RAISE, each with its lock.
const SECUREBITS_LOCKED_DOWN: c_long = 0b1110_1111;
const LAST_CAP: c_long = 63;
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// The steps, for error messages (`Failed::step`).
pub const STEP_BOUNDING: u32 = 20;
pub const STEP_SECUREBITS: u32 = 21;
pub const STEP_AMBIENT: u32 = 22;
pub const STEP_CAPSET: u32 = 23;
pub const STEP_NO_NEW_PRIVS: u32 = 24;

pub fn step_name(step: u32) -> Option<&'static str> {
    Some(match step {
        STEP_BOUNDING => "emptying the capability bounding set",
        STEP_SECUREBITS => "locking the securebits",
        STEP_AMBIENT => "clearing ambient capabilities",
        STEP_CAPSET => "dropping capabilities",
        STEP_NO_NEW_PRIVS => "setting no_new_privs",
        _ => return None,
    })
}

/// Drops every capability. `privileged` says the process holds CAP_SETPCAP (root, or inside
/// its own user namespace), which emptying the bounding set and the securebits need; without
/// it there is nothing they would take away that no_new_privs does not already keep away.
pub fn drop_all(privileged: bool) -> Result<(), Failed> {
    // SAFETY: each call is a plain prctl or capset on integers and stack memory.
    unsafe {
        if privileged {
            for cap in 0..=LAST_CAP {
                if prctl(PR_CAPBSET_DROP, cap, 0 as c_long, 0 as c_long, 0 as c_long) != 0 {
                    // EINVAL: past the kernel's last capability.
                    if sys::errno() == sys::EINVAL && cap > 0 {
                        break;
                    }
                    return Err(Failed::now(STEP_BOUNDING));
                }
            }
            let bits = SECUREBITS_LOCKED_DOWN;
            if prctl(
                PR_SET_SECUREBITS,
                bits,
                0 as c_long,
                0 as c_long,
                0 as c_long,
            ) != 0
            {
                return Err(Failed::now(STEP_SECUREBITS));
            }
        }
        // EINVAL: a kernel before ambient capabilities (4.3), which has none to clear.
        if prctl(
            PR_CAP_AMBIENT,
            PR_CAP_AMBIENT_CLEAR_ALL,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        ) != 0
            && sys::errno() != sys::EINVAL
        {
            return Err(Failed::now(STEP_AMBIENT));
        }
        let header = [CAPABILITY_VERSION_3, 0];
        let data = [0u32; 6]; // effective, permitted, inheritable for caps 0-31 and 32-63
        if syscall(sys::nr::CAPSET, header.as_ptr(), data.as_ptr()) != 0 {
            return Err(Failed::now(STEP_CAPSET));
        }
        no_new_privs()
    }
}

/// Whether this process may empty its bounding set (holds CAP_SETPCAP, effective).
pub fn can_drop_bounding() -> bool {
    const CAP_SETPCAP: u32 = 8;
    let header = [CAPABILITY_VERSION_3, 0];
    let mut data = [0u32; 6];
    // SAFETY: capget writes two u32 triples into data.
    let done = unsafe { syscall(sys::nr::CAPGET, header.as_ptr(), data.as_mut_ptr()) };
    done == 0 && data[0] & (1 << CAP_SETPCAP) != 0
}

/// Sets no_new_privs: from here on exec grants nothing (setuid, file capabilities).
pub fn no_new_privs() -> Result<(), Failed> {
    // SAFETY: a plain prctl on integers.
    let done = unsafe {
        prctl(
            sys::PR_SET_NO_NEW_PRIVS,
            1 as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
        )
    };
    if done != 0 {
        return Err(Failed::now(STEP_NO_NEW_PRIVS));
    }
    Ok(())
}
