fn main() {
    std::process::exit(wirelab_cli::main_with_args(std::env::args().collect()));
}
