//! The terminal under the line editor, through a few libc calls (`extern "C"`, no crates):
//! termios raw mode while a line is edited and only then, bracketed paste, the width, and
//! reads that a signal or a short timeout can end.
//!
//! The terminal is always given back as it was found. `Raw` restores it when dropped; a panic
//! hook restores it before the panic message (release builds abort, so no drop would run);
//! SIGTERM and SIGHUP restore it before turn dies of them; while a line is edited SIGTSTP
//! only sets a flag, and the editor hands the terminal back before it stops (`suspend`), and
//! SIGCONT after a stop turn did not ask for (SIGSTOP) sets raw mode again. Turns run in the
//! terminal's normal mode, so Ctrl-C there is the usual SIGINT.
//!
//! Like `signal.rs`, the handlers are installed without SA_RESTART: a read waiting for a key
//! returns `Interrupted`, and the editor asks the flags why.

use crate::sandbox::sys::{poll, PollFd, POLLIN};
use std::io::{self, Write};
use std::os::raw::{c_int, c_uint, c_ulong, c_ushort};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};
use std::time::Duration;

const STDIN: c_int = 0;
const STDOUT: c_int = 1;
const TCSANOW: c_int = 0;
const TIOCGWINSZ: c_ulong = 0x5413;

const SIGHUP: c_int = 1;
const SIGTERM: c_int = 15;
const SIGCONT: c_int = 18;
const SIGTSTP: c_int = 20;
const SIGWINCH: c_int = 28;
const SIG_DFL: usize = 0;
const SIG_IGN: usize = 1;

// termios flags (Linux).
const BRKINT: c_uint = 0o2;
const INPCK: c_uint = 0o20;
const ISTRIP: c_uint = 0o40;
const ICRNL: c_uint = 0o400;
const IXON: c_uint = 0o2000;
const CS8: c_uint = 0o60;
const ISIG: c_uint = 0o1;
const ICANON: c_uint = 0o2;
const ECHO: c_uint = 0o10;
const IEXTEN: c_uint = 0o100000;
const VTIME: usize = 5;
const VMIN: usize = 6;

const PASTE_ON: &[u8] = b"\x1b[?2004h";
const PASTE_OFF: &[u8] = b"\x1b[?2004l";

/// `struct termios` as Linux's glibc and musl lay it out.
#[repr(C)]
#[derive(Clone, Copy)]
struct Termios {
    iflag: c_uint,
    oflag: c_uint,
    cflag: c_uint,
    lflag: c_uint,
    line: u8,
    cc: [u8; 32],
    ispeed: c_uint,
    ospeed: c_uint,
}

#[repr(C)]
struct Winsize {
    rows: c_ushort,
    cols: c_ushort,
    xpixel: c_ushort,
    ypixel: c_ushort,
}

extern "C" {
    fn tcgetattr(fd: c_int, termios: *mut Termios) -> c_int;
    fn tcsetattr(fd: c_int, action: c_int, termios: *const Termios) -> c_int;
    fn ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
    fn read(fd: c_int, buf: *mut std::ffi::c_void, count: usize) -> isize;
    fn write(fd: c_int, buf: *const std::ffi::c_void, count: usize) -> isize;
    fn signal(signum: c_int, handler: usize) -> usize;
    fn siginterrupt(signum: c_int, flag: c_int) -> c_int;
    fn raise(signum: c_int) -> c_int;
}

/// The terminal's modes as turn found them.
static SAVED: OnceLock<Termios> = OnceLock::new();
/// Raw mode is on (what the restoring handlers check).
static RAW: AtomicBool = AtomicBool::new(false);
static RESIZED: AtomicBool = AtomicBool::new(false);
static STOP: AtomicBool = AtomicBool::new(false);
static CONTINUED: AtomicBool = AtomicBool::new(false);
/// turn was started with SIGTSTP ignored (no job control): Ctrl-Z does nothing.
static TSTP_IGNORED: AtomicBool = AtomicBool::new(false);

/// Puts the saved modes back, if raw mode is on (and says whether it was). Async-signal-safe.
fn restore() -> bool {
    let raw = RAW.swap(false, Ordering::SeqCst);
    if raw {
        if let Some(saved) = SAVED.get() {
            // SAFETY: saved is a termios tcgetattr filled; tcsetattr and write are
            // async-signal-safe.
            unsafe {
                tcsetattr(STDIN, TCSANOW, saved);
                write(STDOUT, PASTE_OFF.as_ptr().cast(), PASTE_OFF.len());
            }
        }
    }
    raw
}

/// Restores the terminal and ends the line being edited, so what is printed next (the
/// shell's "Terminated", the panic message) starts a line of its own. Async-signal-safe.
fn give_back() {
    if restore() {
        // SAFETY: write is async-signal-safe; it bypasses stdout's lock and buffer.
        unsafe { write(STDOUT, b"\r\n".as_ptr().cast(), 2) };
    }
}

extern "C" fn on_terminate(signum: c_int) {
    give_back();
    // SAFETY: back to the default action, then the same signal again: turn dies of it as it
    // would have, with the terminal restored.
    unsafe {
        signal(signum, SIG_DFL);
        raise(signum);
    }
}

extern "C" fn on_stop(_: c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_continue(_: c_int) {
    CONTINUED.store(true, Ordering::SeqCst);
}

extern "C" fn on_resize(_: c_int) {
    RESIZED.store(true, Ordering::SeqCst);
}

/// Saves the terminal's modes and installs what restores them (panic hook, SIGTERM and
/// SIGHUP). Fails when stdin is not a terminal whose modes can be read.
pub fn init() -> io::Result<()> {
    let mut termios = std::mem::MaybeUninit::<Termios>::uninit();
    // SAFETY: tcgetattr fills the struct when it returns 0.
    if unsafe { tcgetattr(STDIN, termios.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: filled above.
    let _ = SAVED.set(unsafe { termios.assume_init() });
    static HOOKS: Once = Once::new();
    HOOKS.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            give_back();
            previous(info);
        }));
        // SAFETY: the handler only calls async-signal-safe functions.
        unsafe {
            for signum in [SIGTERM, SIGHUP] {
                if signal(signum, on_terminate as extern "C" fn(c_int) as usize) == SIG_IGN {
                    signal(signum, SIG_IGN); // nohup: keep ignoring it
                }
            }
        }
    });
    Ok(())
}

/// Raw mode, on while this lives.
pub struct Raw {
    tstp: usize,
    cont: usize,
    winch: usize,
}

/// Raw input modes (no echo, no line discipline, no signals from keys; output processing
/// stays) and bracketed paste. Not TCSAFLUSH: what was typed ahead during a turn is kept.
fn set_raw() -> io::Result<()> {
    let saved = SAVED
        .get()
        .ok_or_else(|| io::Error::other("no saved modes"))?;
    let mut raw = *saved;
    raw.iflag &= !(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.cflag |= CS8;
    raw.lflag &= !(ECHO | ICANON | IEXTEN | ISIG);
    raw.cc[VMIN] = 1;
    raw.cc[VTIME] = 0;
    // SAFETY: raw is a valid termios.
    if unsafe { tcsetattr(STDIN, TCSANOW, &raw) } != 0 {
        return Err(io::Error::last_os_error());
    }
    RAW.store(true, Ordering::SeqCst);
    let _ = out(PASTE_ON);
    Ok(())
}

impl Raw {
    /// Raw modes (`set_raw`); SIGTSTP, SIGCONT and SIGWINCH become flags meanwhile.
    pub fn enter() -> io::Result<Raw> {
        set_raw()?;
        CONTINUED.store(false, Ordering::SeqCst);
        // SAFETY: the handlers only store to atomics.
        let (tstp, cont, winch) = unsafe {
            let tstp = signal(SIGTSTP, on_stop as extern "C" fn(c_int) as usize);
            if tstp == SIG_IGN {
                TSTP_IGNORED.store(true, Ordering::SeqCst);
                signal(SIGTSTP, SIG_IGN);
            }
            siginterrupt(SIGTSTP, 1);
            let cont = signal(SIGCONT, on_continue as extern "C" fn(c_int) as usize);
            siginterrupt(SIGCONT, 1);
            let winch = signal(SIGWINCH, on_resize as extern "C" fn(c_int) as usize);
            siginterrupt(SIGWINCH, 1);
            (tstp, cont, winch)
        };
        Ok(Raw { tstp, cont, winch })
    }

    /// Raw modes again, after something else changed them: a shell puts its own modes back
    /// while turn is stopped (SIGSTOP), and `fg` does not undo that.
    pub fn again(&self) -> io::Result<()> {
        set_raw()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = restore();
        // SAFETY: puts back the dispositions `enter` replaced.
        unsafe {
            signal(SIGTSTP, self.tstp);
            signal(SIGCONT, self.cont);
            signal(SIGWINCH, self.winch);
        }
    }
}

/// What a wait for input ended with.
pub enum Input {
    /// This many bytes were read.
    Bytes(usize),
    /// The terminal is gone.
    End,
    /// Nothing came within the timeout.
    Quiet,
    /// A signal: ask `interrupted()`, `take_stop()`, `take_resized()`.
    Signal,
}

/// Reads what the terminal has, waiting at most `timeout` when one is given.
pub fn read_input(buf: &mut [u8], timeout: Option<Duration>) -> io::Result<Input> {
    if let Some(timeout) = timeout {
        let mut fd = PollFd {
            fd: STDIN,
            events: POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { poll(&mut fd, 1, timeout.as_millis().min(60_000) as c_int) };
        match ready {
            0 => return Ok(Input::Quiet),
            n if n < 0 => return interrupted_or(io::Error::last_os_error()),
            _ => {}
        }
    }
    // SAFETY: buf is valid for buf.len() bytes.
    match unsafe { read(STDIN, buf.as_mut_ptr().cast(), buf.len()) } {
        0 => Ok(Input::End),
        n if n < 0 => interrupted_or(io::Error::last_os_error()),
        n => Ok(Input::Bytes(n as usize)),
    }
}

fn interrupted_or(error: io::Error) -> io::Result<Input> {
    match error.kind() {
        io::ErrorKind::Interrupted => Ok(Input::Signal),
        _ => Err(error),
    }
}

/// Writes to the terminal (stdout) and flushes.
pub fn out(bytes: &[u8]) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()
}

/// The terminal's width in columns (80 when it will not say).
pub fn columns() -> usize {
    let mut size = Winsize {
        rows: 0,
        cols: 0,
        xpixel: 0,
        ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ fills a winsize.
    let ok = unsafe { ioctl(STDOUT, TIOCGWINSZ, &mut size as *mut Winsize) } == 0;
    if ok && size.cols > 0 {
        size.cols as usize
    } else {
        80
    }
}

/// Whether SIGTSTP came (and forgets it).
pub fn take_stop() -> bool {
    STOP.swap(false, Ordering::SeqCst)
}

/// Whether turn was continued after a stop it did not ask for (and forgets it).
pub fn take_continued() -> bool {
    CONTINUED.swap(false, Ordering::SeqCst)
}

/// Whether the terminal was resized (and forgets it).
pub fn take_resized() -> bool {
    RESIZED.swap(false, Ordering::SeqCst)
}

/// Stops turn as Ctrl-Z would, with the terminal in its normal modes; raw mode is entered
/// again after `fg`. Does nothing when turn runs without job control.
pub fn suspend(raw: Raw) -> io::Result<Raw> {
    if TSTP_IGNORED.load(Ordering::SeqCst) {
        return Ok(raw);
    }
    drop(raw); // normal modes, SIGTSTP back to its default (stopping)
               // SAFETY: raise with SIGTSTP's default action stops the process until SIGCONT.
    unsafe { raise(SIGTSTP) };
    Raw::enter()
}
