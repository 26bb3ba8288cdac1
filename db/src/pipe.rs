//! What both command lines do when their output is closed: `awari-probe line … | head`
//! stops reading, the next write fails with a broken pipe, and the process should end quietly,
//! as `cat` or `seq` do, not with a panic and a backtrace.

/// Make a write to a closed standard output or error end the process quietly (exit code 0)
/// instead of panicking: `println!` panics on a broken pipe, and this hook, installed first
/// thing in `main`, turns exactly that panic into an exit; every other panic is reported as
/// before.
pub fn exit_quietly_on_closed_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_pipe(message) {
            std::process::exit(0);
        }
        report(info);
    }));
}

/// Whether a panic message is that of `print!` to a closed pipe.
fn is_closed_pipe(message: &str) -> bool {
    message.starts_with("failed printing to std") && message.contains("Broken pipe")
}

#[cfg(test)]
mod tests {
    use super::is_closed_pipe;

    #[test]
    fn only_the_broken_pipe_panic_is_quiet() {
        assert!(is_closed_pipe(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(is_closed_pipe(
            "failed printing to stderr: Broken pipe (os error 32)"
        ));
        assert!(!is_closed_pipe(
            "failed printing to stdout: No space left on device"
        ));
        assert!(!is_closed_pipe("index out of bounds: Broken pipe"));
    }
}
