//! The command-line derives (`Parser`, `Args`, `Subcommand`, `ValueEnum`) of
//! nastune's own argument parser, in `argv.rs`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use syn::{DeriveInput, parse_macro_input};

mod argv;

fn derive(input: TokenStream, expand: fn(&DeriveInput) -> syn::Result<Tokens>) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

#[proc_macro_derive(Parser, attributes(arg, command))]
pub fn derive_parser(input: TokenStream) -> TokenStream {
    derive(input, argv::expand_parser)
}

#[proc_macro_derive(Args, attributes(arg, command))]
pub fn derive_args(input: TokenStream) -> TokenStream {
    derive(input, argv::expand_args)
}

#[proc_macro_derive(Subcommand, attributes(arg, command))]
pub fn derive_subcommand(input: TokenStream) -> TokenStream {
    derive(input, argv::expand_subcommand)
}

#[proc_macro_derive(ValueEnum, attributes(value))]
pub fn derive_value_enum(input: TokenStream) -> TokenStream {
    derive(input, argv::expand_value_enum)
}
