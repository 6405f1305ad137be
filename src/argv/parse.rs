//! Turns the words of a command line into Matches (mod.rs), checking them
//! against the spec (spec.rs). To be written: see /work/prompts/argv.md.
