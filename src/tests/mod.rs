//! Tests of the crate as a whole, not of one module.

mod layering;
