//! Files generated from the command-line definition itself, so they cannot
//! drift from it: shell completions (clap_complete) and man pages
//! (clap_mangen).

use clap::Command;
use std::path::Path;

/// `schedlab completions SHELL`: the completion script on stdout.
pub fn completions(mut cmd: Command, shell: clap_complete::Shell) -> i32 {
    clap_complete::generate(shell, &mut cmd, "schedlab", &mut std::io::stdout());
    0
}

/// `schedlab man`: schedlab(1) on stdout, or with `--dir DIR` one page per
/// command (schedlab.1, schedlab-run.1, schedlab-repro-swb.1, ...) in DIR.
pub fn man(cmd: Command, dir: Option<&Path>) -> i32 {
    let cmd = cmd.version(crate::util::version::LONG);
    let written = match dir {
        None => clap_mangen::Man::new(cmd)
            .date(crate::util::version::BUILD_DATE)
            .render(&mut std::io::stdout()),
        Some(d) => std::fs::create_dir_all(d).and_then(|_| clap_mangen::generate_to(cmd, d)),
    };
    match (written, dir) {
        (Ok(()), _) => 0,
        (Err(e), Some(d)) => {
            eprintln!("schedlab: error: --dir {}: {e}", d.display());
            2
        }
        (Err(e), None) => {
            eprintln!("schedlab: error: cannot write the man page: {e}");
            1
        }
    }
}
