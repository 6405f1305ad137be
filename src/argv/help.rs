//! Help, usage and version text from the spec. To be written.
pub fn arg_display(arg: &super::spec::Arg) -> String {
    arg.id.to_string()
}
