//! SIGINT and SIGALRM as flags, so a blocking read or a child wait can be abandoned without
//! threads: both handlers are installed without SA_RESTART, which makes a blocked `read` return
//! `Interrupted`; the reader then asks these flags which signal it was.
//!
//! A second Ctrl-C while the first is still being handled ends the process at once (exit 130),
//! so turn can never get stuck ignoring the user.

use std::io::{self, Read};
use std::os::raw::{c_int, c_uint};
use std::sync::atomic::{AtomicBool, Ordering};

const SIGINT: c_int = 2;
const SIGALRM: c_int = 14;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static ALARMED: AtomicBool = AtomicBool::new(false);

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn siginterrupt(signum: c_int, flag: c_int) -> c_int;
    fn alarm(seconds: c_uint) -> c_uint;
    fn _exit(status: c_int) -> !;
}

extern "C" fn on_interrupt(_: c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { _exit(130) }
    }
}

extern "C" fn on_alarm(_: c_int) {
    ALARMED.store(true, Ordering::SeqCst);
}

/// Installs both handlers; call once at start-up.
pub fn install() {
    // SAFETY: the handlers only touch atomics and call _exit, which are async-signal-safe.
    unsafe {
        signal(SIGINT, on_interrupt as extern "C" fn(c_int) as usize);
        siginterrupt(SIGINT, 1);
        signal(SIGALRM, on_alarm as extern "C" fn(c_int) as usize);
        siginterrupt(SIGALRM, 1);
    }
}

/// Whether Ctrl-C was pressed since the last `clear`.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Forgets a handled Ctrl-C (the REPL goes back to its prompt).
pub fn clear() {
    INTERRUPTED.store(false, Ordering::SeqCst);
}

/// Runs `f` (a blocking read) with SIGALRM armed to fire after `secs`; says which signal, if
/// any, cut it short. `was_signal` tells whether an error is the `Interrupted` a signal causes;
/// one that neither flag explains (none is expected) just retries.
pub fn with_deadline<T, E>(
    secs: u64,
    mut f: impl FnMut() -> Result<T, E>,
    was_signal: impl Fn(&E) -> bool,
) -> Result<T, Cut<E>> {
    loop {
        if interrupted() {
            return Err(Cut::Interrupted);
        }
        ALARMED.store(false, Ordering::SeqCst);
        // SAFETY: alarm has no memory effects.
        unsafe { alarm(secs.min(c_uint::MAX as u64) as c_uint) };
        let result = f();
        unsafe { alarm(0) };
        match result {
            Err(e) if was_signal(&e) => {
                if interrupted() {
                    return Err(Cut::Interrupted);
                }
                if ALARMED.load(Ordering::SeqCst) {
                    return Err(Cut::Timeout);
                }
            }
            Err(e) => return Err(Cut::Failed(e)),
            Ok(value) => return Ok(value),
        }
    }
}

/// Why a guarded call did not complete.
#[derive(Debug)]
pub enum Cut<E> {
    Interrupted,
    Timeout,
    Failed(E),
}

/// A reader whose every read is guarded by `with_deadline`: the deadline is an idle timeout
/// (time without a byte), which is what a stream of tokens needs.
pub struct Guarded<R> {
    pub inner: R,
    pub idle_secs: u64,
}

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Errors leave as `Other` wrapping the Cut's text, so `read_line` does not retry them;
        // callers check `interrupted()` to tell Ctrl-C from the rest.
        let was_signal = |e: &io::Error| e.kind() == io::ErrorKind::Interrupted;
        with_deadline(self.idle_secs, || self.inner.read(buf), was_signal).map_err(
            |cut| match cut {
                Cut::Failed(e) => e,
                Cut::Interrupted => io::Error::other("interrupted"),
                Cut::Timeout => io::Error::new(io::ErrorKind::TimedOut, "idle timeout"),
            },
        )
    }
}
