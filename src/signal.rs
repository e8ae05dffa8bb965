//! SIGINT and SIGALRM as flags, so a blocking read or a child wait can be abandoned without
//! threads: both handlers are installed without SA_RESTART, which makes a blocked `read` return
//! `Interrupted`; the reader then asks these flags which signal it was.
//!
//! A second Ctrl-C while the first is still being handled ends the process at once (exit 130),
//! so turn can never get stuck ignoring the user.

use std::io::{self, Read};
use std::os::raw::{c_int, c_long};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const SIGINT: c_int = 2;
const SIGALRM: c_int = 14;
const ITIMER_REAL: c_int = 0;
const SIG_IGN: usize = 1;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static ALARMED: AtomicBool = AtomicBool::new(false);

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn siginterrupt(signum: c_int, flag: c_int) -> c_int;
    fn setitimer(which: c_int, new: *const Itimerval, old: *mut Itimerval) -> c_int;
    fn _exit(status: c_int) -> !;
}

/// `struct itimerval` as 64-bit Linux lays it out (time_t and suseconds_t are both long).
#[repr(C)]
struct Itimerval {
    interval: [c_long; 2],
    value: [c_long; 2],
}

/// Arms SIGALRM to fire once after `after`; zero disarms it.
fn arm(after: Duration) {
    let secs = after.as_secs().min(c_long::MAX as u64) as c_long;
    let timer = Itimerval {
        interval: [0, 0],
        value: [secs, after.subsec_micros() as c_long],
    };
    // SAFETY: timer is a valid itimerval; the old value is not asked for.
    unsafe { setitimer(ITIMER_REAL, &timer, std::ptr::null_mut()) };
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
        // A shell starts background jobs with SIGINT ignored, so Ctrl-C meant for the
        // foreground leaves them alone; turn keeps it that way.
        if signal(SIGINT, on_interrupt as extern "C" fn(c_int) as usize) == SIG_IGN {
            signal(SIGINT, SIG_IGN);
        }
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

/// Runs `f` (a blocking read or wait) with SIGALRM armed to fire after `limit`; says which
/// signal, if any, cut it short. `was_signal` tells whether an error is the `Interrupted` a signal causes;
/// one that neither flag explains (none is expected) just retries.
pub fn with_deadline<T, E>(
    limit: Duration,
    mut f: impl FnMut() -> Result<T, E>,
    was_signal: impl Fn(&E) -> bool,
) -> Result<T, Cut<E>> {
    loop {
        if interrupted() {
            return Err(Cut::Interrupted);
        }
        ALARMED.store(false, Ordering::SeqCst);
        arm(limit);
        let result = f();
        arm(Duration::ZERO);
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
    pub idle: Duration,
}

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Errors leave as `Other` wrapping the Cut's text, so `read_line` does not retry them;
        // callers check `interrupted()` to tell Ctrl-C from the rest.
        let was_signal = |e: &io::Error| e.kind() == io::ErrorKind::Interrupted;
        with_deadline(self.idle, || self.inner.read(buf), was_signal).map_err(|cut| match cut {
            Cut::Failed(e) => e,
            Cut::Interrupted => io::Error::other("interrupted"),
            Cut::Timeout => io::Error::new(io::ErrorKind::TimedOut, "idle timeout"),
        })
    }
}
