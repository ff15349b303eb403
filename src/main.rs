//! The `worldfs` command (see `worldfs::cli`).

fn main() -> std::process::ExitCode {
    worldfs::cli::main()
}
