fn main() {
    // Die quietly on a closed pipe (`schedlab ... | head`), like other Unix
    // tools, instead of panicking in println!.
    // SAFETY: called once at start-up, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Ctrl-C or a kill removes the temporaries of unfinished outputs.
    schedlab::util::fs::install_signal_cleanup();
    std::process::exit(schedlab::cli::main());
}
