fn main() {
    std::process::exit(schedlab::cli::main());
}
