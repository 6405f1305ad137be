//! placeholder
use super::Rule;
pub static RULES: &[&Rule] = &[];
