//! Every integration test of `oxydra-e2e`, in one binary: a module per file (each binary links the
//! whole dependency tree again, so one per crate keeps builds and CI short). A new test file is
//! added as a `mod` line here.

mod architecture;
mod config_example;
mod recipes;
mod tidy;
