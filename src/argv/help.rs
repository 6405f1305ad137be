//! Help, usage and version text from the spec. To be written.
