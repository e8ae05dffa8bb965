//! The seccomp layer: a short classic-BPF program, installed in each command's process just
//! before exec, that refuses the system calls the other layers leave open:
//!
//! - `ioctl` TIOCSTI and TIOCLINUX: pushing keystrokes into a terminal, which the user's shell
//!   would run after turn exits;
//! - `ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd`: reading or steering another process
//!   (turn itself, where no PID namespace hides it) and taking its file descriptors;
//! - `keyctl`, `add_key`, `request_key`: the kernel keyrings are not namespaced and may hold
//!   the user's secrets;
//! - `io_uring_*`: io_uring performs socket and file operations without the system calls this
//!   filter sees;
//! - with `--no-network`, `socket` for any family but the ones the network namespace contains
//!   (Unix sockets reach host services by path; without a namespace, IP is refused as well).
//!
//! Calls from another architecture's table (i386 on x86-64, x32) are refused too, as a filter
//! keyed on this architecture's numbers would let them pass. `program` is pure and tested by
//! running the program through a small interpreter.

use std::io;
use std::os::raw::{c_int, c_long, c_ulong};

/// One classic BPF instruction (`struct sock_filter`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

// Opcodes: load a word from seccomp_data, jump if equal / greater or equal, return.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;

pub const RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const EPERM: u32 = 1;

// struct seccomp_data: nr, arch, instruction pointer, then six 64-bit arguments. Both
// supported architectures are little-endian, so an argument's low 32 bits come first.
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_low(n: u32) -> u32 {
    16 + 8 * n
}

const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;
const AF_INET: u32 = 2;
const AF_INET6: u32 = 10;
const AF_NETLINK: u32 = 16;

/// An architecture's audit number and the system call numbers the filter names.
#[derive(Clone, Copy, Debug)]
pub struct Arch {
    pub audit: u32,
    /// Numbers at or above this belong to another ABI on the same architecture (x32).
    pub foreign_from: Option<u32>,
    pub ioctl: u32,
    pub socket: u32,
    pub denied: [u32; 10],
}

#[cfg_attr(target_arch = "aarch64", allow(dead_code))]
pub const X86_64: Arch = Arch {
    audit: 0xC000_003E,
    foreign_from: Some(0x4000_0000),
    ioctl: 16,
    socket: 41,
    // ptrace, process_vm_readv, process_vm_writev, pidfd_getfd, add_key, request_key,
    // keyctl, io_uring_setup, io_uring_enter, io_uring_register
    denied: [101, 310, 311, 438, 248, 249, 250, 425, 426, 427],
};

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub const AARCH64: Arch = Arch {
    audit: 0xC000_00B7,
    foreign_from: None,
    ioctl: 29,
    socket: 198,
    denied: [117, 270, 271, 438, 217, 218, 219, 425, 426, 427],
};

#[cfg(target_arch = "x86_64")]
pub const NATIVE: Arch = X86_64;
#[cfg(target_arch = "aarch64")]
pub const NATIVE: Arch = AARCH64;

/// Which sockets a command may open.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Network {
    /// Any (the network is not restricted).
    Open,
    /// `--no-network` inside a network namespace of its own: IP (which reaches only that
    /// namespace) and netlink, no Unix or other families.
    Namespaced,
    /// `--no-network` without a network namespace: netlink only (socketpair still works).
    Refused,
}

/// Where a jump goes, resolved to offsets once the program is laid out.
#[derive(Clone, Copy)]
enum Label {
    Next,
    Allow,
    Deny,
    Kill,
    Ioctl,
    Socket,
}

enum Op {
    Load(u32),
    Jump(u16, u32, Label, Label),
    Ret(u32),
    Mark(Label),
}

/// The filter for `network` on `arch`.
pub fn program(arch: &Arch, network: Network) -> Vec<Insn> {
    use Label::*;
    let mut ops = vec![
        Op::Load(ARCH),
        Op::Jump(JEQ_K, arch.audit, Next, Kill),
        Op::Load(NR),
    ];
    if let Some(from) = arch.foreign_from {
        ops.push(Op::Jump(JGE_K, from, Deny, Next));
    }
    ops.push(Op::Jump(JEQ_K, arch.ioctl, Ioctl, Next));
    for nr in arch.denied {
        ops.push(Op::Jump(JEQ_K, nr, Deny, Next));
    }
    if network != Network::Open {
        ops.push(Op::Jump(JEQ_K, arch.socket, Socket, Next));
    }
    // Jumps only go forward: the argument checks come after the chain, the returns last.
    ops.push(Op::Ret(RET_ALLOW));
    ops.extend([
        Op::Mark(Ioctl),
        Op::Load(arg_low(1)),
        Op::Jump(JEQ_K, TIOCSTI, Deny, Next),
        Op::Jump(JEQ_K, TIOCLINUX, Deny, Allow),
    ]);
    if network != Network::Open {
        ops.extend([Op::Mark(Socket), Op::Load(arg_low(0))]);
        if network == Network::Namespaced {
            ops.push(Op::Jump(JEQ_K, AF_INET, Allow, Next));
            ops.push(Op::Jump(JEQ_K, AF_INET6, Allow, Next));
        }
        ops.push(Op::Jump(JEQ_K, AF_NETLINK, Allow, Deny));
    }
    ops.extend([
        Op::Mark(Allow),
        Op::Ret(RET_ALLOW),
        Op::Mark(Deny),
        Op::Ret(RET_ERRNO | EPERM),
        Op::Mark(Kill),
        Op::Ret(RET_KILL_PROCESS),
    ]);
    assemble(&ops)
}

/// Lays the ops out and turns labels into relative jump offsets.
fn assemble(ops: &[Op]) -> Vec<Insn> {
    let mut at = std::collections::HashMap::new();
    let mut index = 0;
    for op in ops {
        match op {
            Op::Mark(label) => {
                at.insert(*label as u8, index);
            }
            _ => index += 1,
        }
    }
    let mut program = Vec::with_capacity(index);
    for op in ops {
        let here = program.len();
        let offset = |label: Label| -> u8 {
            let target = match label {
                Label::Next => here + 1,
                label => at[&(label as u8)],
            };
            let forward = target.checked_sub(here + 1).expect("jumps go forward");
            u8::try_from(forward).expect("jumps are less than 256 apart")
        };
        program.push(match *op {
            Op::Load(k) => Insn {
                code: LD_W_ABS,
                jt: 0,
                jf: 0,
                k,
            },
            Op::Jump(code, k, yes, no) => Insn {
                code,
                jt: offset(yes),
                jf: offset(no),
                k,
            },
            Op::Ret(k) => Insn {
                code: RET_K,
                jt: 0,
                jf: 0,
                k,
            },
            Op::Mark(_) => continue,
        });
    }
    program
}

/// `struct sock_fprog`: what prctl takes. Built in the parent; it points into the program.
#[repr(C)]
pub struct Fprog {
    len: u16,
    filter: *const Insn,
}

impl Fprog {
    pub fn new(program: &[Insn]) -> Fprog {
        Fprog {
            len: program.len() as u16,
            filter: program.as_ptr(),
        }
    }
}

const PR_SET_SECCOMP: c_int = 22;
const SECCOMP_MODE_FILTER: c_ulong = 2;

/// Installs the filter on the calling process (for good, inherited by what it runs). Needs
/// no_new_privs. One syscall: safe between fork and exec.
pub fn install(fprog: &Fprog) -> io::Result<()> {
    // SAFETY: fprog points at a valid program that outlives the call.
    let done = unsafe {
        super::sys::prctl(
            PR_SET_SECCOMP,
            SECCOMP_MODE_FILTER,
            fprog as *const Fprog,
            0 as c_long,
            0 as c_long,
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this kernel has seccomp filters: installing a null program fails with EFAULT where
/// it does and EINVAL where it does not, and installs nothing either way.
pub fn available() -> bool {
    // SAFETY: a null program is never read past the pointer check.
    let done = unsafe {
        super::sys::prctl(
            PR_SET_SECCOMP,
            SECCOMP_MODE_FILTER,
            std::ptr::null::<Fprog>(),
            0 as c_long,
            0 as c_long,
        )
    };
    done != 0 && super::sys::errno() == 14 // EFAULT
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `program` on a system call the way the kernel would, for the opcodes it uses.
    fn verdict(program: &[Insn], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, arg) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&arg.to_le_bytes());
        }
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let insn = program[pc];
            pc += 1;
            match insn.code {
                LD_W_ABS => {
                    let at = insn.k as usize;
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                JEQ_K | JGE_K => {
                    let taken = if insn.code == JEQ_K {
                        acc == insn.k
                    } else {
                        acc >= insn.k
                    };
                    pc += if taken { insn.jt } else { insn.jf } as usize;
                }
                RET_K => return insn.k,
                code => panic!("unknown opcode {code:#x}"),
            }
        }
    }

    const DENY: u32 = RET_ERRNO | EPERM;

    fn call(network: Network, nr: u32, args: [u64; 6]) -> u32 {
        verdict(&program(&X86_64, network), X86_64.audit, nr, args)
    }

    #[test]
    fn ordinary_calls_pass() {
        for nr in [0, 1, 2, 59, 57, 231, 439] {
            assert_eq!(call(Network::Open, nr, [0; 6]), RET_ALLOW, "nr {nr}");
        }
        assert_eq!(call(Network::Open, 16, [1, 0x5401, 0, 0, 0, 0]), RET_ALLOW);
        // TCGETS
    }

    #[test]
    fn terminal_injection_is_refused_whatever_the_high_bits() {
        for request in [TIOCSTI as u64, TIOCLINUX as u64, 0xffff_ffff_0000_5412] {
            assert_eq!(call(Network::Open, 16, [0, request, 0, 0, 0, 0]), DENY);
        }
    }

    #[test]
    fn other_processes_keyrings_and_io_uring_are_refused() {
        for nr in X86_64.denied {
            assert_eq!(call(Network::Open, nr, [0; 6]), DENY, "nr {nr}");
        }
        let aarch64 = program(&AARCH64, Network::Open);
        assert_eq!(verdict(&aarch64, AARCH64.audit, 117, [0; 6]), DENY);
        assert_eq!(verdict(&aarch64, AARCH64.audit, 101, [0; 6]), RET_ALLOW);
    }

    #[test]
    fn foreign_architectures_and_x32_are_refused() {
        let program = program(&X86_64, Network::Open);
        assert_eq!(verdict(&program, 0x4000_0003, 1, [0; 6]), RET_KILL_PROCESS); // i386
        assert_eq!(verdict(&program, X86_64.audit, 0x4000_0001, [0; 6]), DENY);
    }

    #[test]
    fn sockets_by_network_mode() {
        let unix = [1, 1, 0, 0, 0, 0];
        let inet = [2, 1, 262, 0, 0, 0]; // IPPROTO_MPTCP
        let udp6 = [10, 2, 0, 0, 0, 0];
        let netlink = [16, 3, 0, 0, 0, 0];
        let vsock = [40, 1, 0, 0, 0, 0];
        for args in [unix, inet, udp6, netlink, vsock] {
            assert_eq!(call(Network::Open, 41, args), RET_ALLOW);
        }
        let namespaced: Vec<u32> = [unix, inet, udp6, netlink, vsock]
            .iter()
            .map(|args| call(Network::Namespaced, 41, *args))
            .collect();
        assert_eq!(namespaced, [DENY, RET_ALLOW, RET_ALLOW, RET_ALLOW, DENY]);
        let refused: Vec<u32> = [unix, inet, udp6, netlink, vsock]
            .iter()
            .map(|args| call(Network::Refused, 41, *args))
            .collect();
        assert_eq!(refused, [DENY, DENY, DENY, RET_ALLOW, DENY]);
        // socketpair (53) stays allowed: it connects to nothing outside.
        assert_eq!(call(Network::Refused, 53, unix), RET_ALLOW);
    }

    #[test]
    fn every_path_ends_in_a_return() {
        for network in [Network::Open, Network::Namespaced, Network::Refused] {
            let program = program(&X86_64, network);
            assert_eq!(program.last().unwrap().code, RET_K);
            assert!(program.len() < 64);
        }
    }
}
