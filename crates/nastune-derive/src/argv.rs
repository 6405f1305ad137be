//! `#[derive(Parser, Args, Subcommand, ValueEnum)]` for nastune's own command
//! line parser (`nastune::argv`), reading clap's attribute syntax.
//!
//! clap's derive builds every argument in code (`Arg::new(..).long(..)…`) and
//! reads it back through generic accessors: about 120 KiB for nastune's 181
//! arguments. These derives write a `static` description instead (the strings
//! and a few words per argument, `nastune::argv::spec`) and one call per field
//! that moves its parsed value out of the matches.
//!
//! Attributes read: on fields `#[arg(long, long = "..", short, short = 'c',
//! value_name, value_parser = expr, value_enum, default_value, default_value_t,
//! default_missing_value, num_args = range, value_delimiter, required,
//! required_unless_present(_any), requires, conflicts_with(_all), global,
//! hide)]` and `#[command(flatten)]`, `#[command(subcommand)]`; on structs
//! `#[command(name, version, about, long_about, group(id = "..", required =
//! bool, args = [..]))]`; on variants `#[command(name, long_about, subcommand,
//! hide)]`; on value-enum variants `#[value(name, hide)]`. The doc comment is
//! the help, as with clap: its first paragraph (without the final period) the
//! short form, the whole the long one. Anything else is a compile error.

use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{
    Data, DeriveInput, Expr, Fields, GenericArgument, LitChar, LitStr, PathArguments, Type,
    punctuated::Punctuated, spanned::Spanned,
};

/// The doc comment as clap reads it: (first paragraph without its final
/// period, the whole text when it has more than one paragraph).
fn doc(attrs: &[syn::Attribute]) -> (String, Option<String>) {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let syn::Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = &nv.value
        else {
            continue;
        };
        let line = s.value();
        let line = line.trim();
        if line.is_empty() {
            if !current.is_empty() {
                paragraphs.push(std::mem::take(&mut current));
            }
        } else {
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(line);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current);
    }
    let first = paragraphs.first().cloned().unwrap_or_default();
    let short = match first.strip_suffix('.') {
        Some(s) if !s.ends_with('.') => s.to_string(),
        _ => first,
    };
    let long = (paragraphs.len() > 1).then(|| paragraphs.join("\n\n"));
    (short, long)
}

fn kebab(ident: &syn::Ident) -> String {
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    let mut s = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            s.push('-');
        }
        s.push(c.to_ascii_lowercase());
    }
    s.replace('_', "-")
}

/// `Some(v)` or `None` as tokens, for an optional literal or expression.
fn opt<T: quote::ToTokens>(v: Option<T>) -> Tokens {
    match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// A command's `long_about`: the attribute's, else the whole doc comment when
/// it has more than one paragraph.
fn long_about(c: &CommandAttrs, doc_long: &Option<String>) -> Tokens {
    match &c.long_about {
        Some(e) => opt(Some(e)),
        None => opt(doc_long.as_ref()),
    }
}

/// One string or an array of strings: `"a"` or `["a", "b"]`.
fn strings(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Vec<String>> {
    let value = meta.value()?;
    if value.peek(syn::token::Bracket) {
        let content;
        syn::bracketed!(content in value);
        let list = Punctuated::<LitStr, syn::Token![,]>::parse_terminated(&content)?;
        Ok(list.iter().map(LitStr::value).collect())
    } else {
        Ok(vec![value.parse::<LitStr>()?.value()])
    }
}

/// `key = "text"`.
fn string(meta: &syn::meta::ParseNestedMeta) -> syn::Result<String> {
    Ok(meta.value()?.parse::<LitStr>()?.value())
}

/// `key = 'c'`.
fn character(meta: &syn::meta::ParseNestedMeta) -> syn::Result<char> {
    Ok(meta.value()?.parse::<LitChar>()?.value())
}

/// A key these derives do not read: an error, not a silent difference from clap.
fn unsupported(meta: &syn::meta::ParseNestedMeta, key: &str) -> syn::Error {
    meta.error(format!("nastune's argv derive does not support `{key}`"))
}

fn boolean(meta: &syn::meta::ParseNestedMeta) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        Ok(meta.value()?.parse::<syn::LitBool>()?.value)
    } else {
        Ok(true)
    }
}

fn key(meta: &syn::meta::ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(|i| i.to_string())
        .unwrap_or_default()
}

/// `#[command(..)]` on a struct, a variant or a field.
#[derive(Default)]
struct CommandAttrs {
    name: Option<String>,
    version: Option<Expr>,
    about: Option<Option<Expr>>,
    long_about: Option<Expr>,
    flatten: bool,
    subcommand: bool,
    hide: bool,
    groups: Vec<(String, bool, Vec<String>)>,
}

fn command_attrs(attrs: &[syn::Attribute]) -> syn::Result<CommandAttrs> {
    let mut c = CommandAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("command")) {
        attr.parse_nested_meta(|meta| {
            match key(&meta).as_str() {
                "name" => c.name = Some(string(&meta)?),
                "version" => c.version = Some(meta.value()?.parse()?),
                "about" if meta.input.peek(syn::Token![=]) => {
                    c.about = Some(Some(meta.value()?.parse()?))
                }
                "about" => c.about = Some(None),
                "long_about" => c.long_about = Some(meta.value()?.parse()?),
                // Versions are shown from every subcommand anyway.
                "propagate_version" => {
                    boolean(&meta)?;
                }
                "flatten" => c.flatten = true,
                "subcommand" => c.subcommand = true,
                "hide" => c.hide = boolean(&meta)?,
                "group" => {
                    let (mut id, mut required, mut args) = (String::new(), false, Vec::new());
                    meta.parse_nested_meta(|g| {
                        match key(&g).as_str() {
                            "id" => id = string(&g)?,
                            "required" => required = boolean(&g)?,
                            "args" => args = strings(&g)?,
                            other => return Err(g.error(format!("unknown group key `{other}`"))),
                        }
                        Ok(())
                    })?;
                    c.groups.push((id, required, args));
                }
                other => return Err(unsupported(&meta, other)),
            }
            Ok(())
        })?;
    }
    Ok(c)
}

/// `#[arg(..)]` on a field.
#[derive(Default)]
struct ArgAttrs {
    long: Option<Option<String>>,
    short: Option<Option<char>>,
    value_name: Option<String>,
    value_parser: Option<Expr>,
    value_enum: bool,
    default_value: Option<String>,
    default_value_t: Option<Expr>,
    default_missing: Option<String>,
    num_args: Option<(usize, usize)>,
    delimiter: Option<char>,
    required: bool,
    required_unless: Vec<String>,
    requires: Vec<String>,
    conflicts: Vec<String>,
    global: bool,
    hide: bool,
}

fn usize_of(e: &Option<Box<Expr>>, default: usize) -> syn::Result<usize> {
    match e.as_deref() {
        None => Ok(default),
        Some(Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        })) => i.base10_parse(),
        Some(other) => Err(syn::Error::new(other.span(), "expected a number")),
    }
}

fn num_args(meta: &syn::meta::ParseNestedMeta) -> syn::Result<(usize, usize)> {
    match meta.value()?.parse::<Expr>()? {
        Expr::Range(r) => {
            let min = usize_of(&r.start, 0)?;
            let max = match (&r.end, r.limits) {
                (None, _) => usize::MAX,
                (Some(_), syn::RangeLimits::Closed(_)) => usize_of(&r.end, 0)?,
                (Some(_), syn::RangeLimits::HalfOpen(_)) => usize_of(&r.end, 0)? - 1,
            };
            Ok((min, max))
        }
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => {
            let n = i.base10_parse()?;
            Ok((n, n))
        }
        other => Err(syn::Error::new(other.span(), "expected a range like 1..")),
    }
}

fn arg_attrs(attrs: &[syn::Attribute]) -> syn::Result<ArgAttrs> {
    let mut a = ArgAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        attr.parse_nested_meta(|meta| {
            match key(&meta).as_str() {
                "long" if meta.input.peek(syn::Token![=]) => a.long = Some(Some(string(&meta)?)),
                "long" => a.long = Some(None),
                "short" if meta.input.peek(syn::Token![=]) => {
                    a.short = Some(Some(character(&meta)?))
                }
                "short" => a.short = Some(None),
                "value_name" => a.value_name = Some(string(&meta)?),
                "value_parser" => a.value_parser = Some(meta.value()?.parse()?),
                "value_enum" => a.value_enum = true,
                "default_value" => a.default_value = Some(string(&meta)?),
                "default_value_t" => a.default_value_t = Some(meta.value()?.parse()?),
                "default_missing_value" => a.default_missing = Some(string(&meta)?),
                "num_args" => a.num_args = Some(num_args(&meta)?),
                "value_delimiter" => a.delimiter = Some(character(&meta)?),
                "required" => a.required = boolean(&meta)?,
                "required_unless_present" | "required_unless_present_any" => {
                    a.required_unless.extend(strings(&meta)?)
                }
                "requires" => a.requires.extend(strings(&meta)?),
                "conflicts_with" | "conflicts_with_all" => a.conflicts.extend(strings(&meta)?),
                "global" => a.global = boolean(&meta)?,
                "hide" => a.hide = boolean(&meta)?,
                other => return Err(unsupported(&meta, other)),
            }
            Ok(())
        })?;
    }
    Ok(a)
}

/// `Option<T>` → T, `Vec<T>` → T.
fn inner<'a>(ty: &'a Type, outer: &str) -> Option<&'a Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != outer {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

fn is_bool(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.is_ident("bool"))
}

/// The spec entry and the `from_matches` expression of one argument field.
fn arg_field(field: &syn::Field) -> syn::Result<(Tokens, Read)> {
    let ident = field
        .ident
        .as_ref()
        .ok_or_else(|| syn::Error::new(field.span(), "named fields only"))?;
    let a = arg_attrs(&field.attrs)?;
    let id = ident.to_string().trim_start_matches("r#").to_string();
    let (help, long_help) = doc(&field.attrs);
    let ty = &field.ty;
    enum Shape<'a> {
        Flag,
        Option(&'a Type),
        Vec(&'a Type),
        Plain(&'a Type),
    }
    let shape = if is_bool(ty) {
        Shape::Flag
    } else if let Some(t) = inner(ty, "Option") {
        Shape::Option(t)
    } else if let Some(t) = inner(ty, "Vec") {
        Shape::Vec(t)
    } else {
        Shape::Plain(ty)
    };
    let value_ty = match shape {
        Shape::Flag => None,
        Shape::Option(t) | Shape::Vec(t) | Shape::Plain(t) => Some(t),
    };
    let long = match &a.long {
        Some(Some(l)) => Some(l.clone()),
        Some(None) => Some(id.replace('_', "-")),
        None => None,
    };
    let short = match a.short {
        Some(Some(c)) => Some(c),
        Some(None) => id.chars().next(),
        None => None,
    };
    let kind = match shape {
        Shape::Flag => quote!(crate::argv::spec::Kind::Flag),
        Shape::Vec(_) => quote!(crate::argv::spec::Kind::Many),
        _ => quote!(crate::argv::spec::Kind::One),
    };
    // As clap's derive: a positional `Vec` takes every word left.
    let positional = long.is_none() && short.is_none();
    let (min, max) = a.num_args.unwrap_or(match shape {
        Shape::Flag => (0, 0),
        Shape::Vec(_) if positional => (1, usize::MAX),
        _ => (1, 1),
    });
    let has_default = a.default_value.is_some() || a.default_value_t.is_some();
    let required = a.required
        || (matches!(shape, Shape::Plain(_)) && !has_default && a.required_unless.is_empty());
    let value_name = match (&a.value_name, &shape) {
        (_, Shape::Flag) => String::new(),
        (Some(v), _) => v.clone(),
        (None, _) => id.to_ascii_uppercase(),
    };
    let shown = match (&a.default_value_t, a.value_enum) {
        (Some(e), true) => {
            quote!(::core::option::Option::Some((|| ::std::string::ToString::to_string(crate::argv::ValueEnum::name(#e))) as fn() -> ::std::string::String))
        }
        (Some(e), false) => {
            quote!(::core::option::Option::Some((|| ::std::string::ToString::to_string(&(#e))) as fn() -> ::std::string::String))
        }
        (None, _) => quote!(::core::option::Option::None),
    };
    let values = match (a.value_enum, value_ty) {
        (true, Some(t)) => quote!(<#t as crate::argv::ValueEnum>::VALUES),
        _ => quote!(&[]),
    };
    let (long_t, short_t) = (opt(long.as_ref()), opt(short));
    let long_help_t = opt(long_help.as_ref());
    let default_t = opt(a.default_value.as_ref());
    let missing_t = opt(a.default_missing.as_ref());
    let delimiter_t = opt(a.delimiter);
    let (unless, requires, conflicts) = (&a.required_unless, &a.requires, &a.conflicts);
    let (global, hide) = (a.global, a.hide);
    let path = value_ty.is_some_and(
        |t| matches!(t, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "PathBuf")),
    );
    let max_t = if max == usize::MAX {
        quote!(usize::MAX)
    } else {
        quote!(#max)
    };
    let plain = long_help.is_none()
        && a.default_value_t.is_none()
        && a.default_missing.is_none()
        && !a.value_enum
        && a.delimiter.is_none()
        && unless.is_empty()
        && requires.is_empty()
        && conflicts.is_empty();
    let more = if plain {
        quote!(&crate::argv::spec::More::NONE)
    } else {
        quote!(&crate::argv::spec::More {
            long_help: #long_help_t,
            default_shown: #shown,
            default_missing: #missing_t,
            values: #values,
            delimiter: #delimiter_t,
            required_unless: &[#(#unless),*],
            requires: &[#(#requires),*],
            conflicts: &[#(#conflicts),*],
        })
    };
    let spec = quote! {
        crate::argv::spec::Arg {
            id: #id,
            long: #long_t,
            short: #short_t,
            value_name: #value_name,
            help: #help,
            kind: #kind,
            num_args: (#min, #max_t),
            default_value: #default_t,
            required: #required,
            global: #global,
            hide: #hide,
            path: #path,
            more: #more,
        }
    };
    let (one, many, parser) = match (&a.value_parser, a.value_enum, value_ty) {
        // A closure that captures nothing is a plain `fn`, whatever `#p` is.
        (Some(p), _, _) => (quote!(one_str), quote!(many_str), quote!(|s| (#p)(s))),
        (None, true, Some(t)) => (
            quote!(one),
            quote!(many),
            quote!(crate::argv::value_enum::<#t>),
        ),
        (None, _, Some(t)) => (
            quote!(one),
            quote!(many),
            quote!(<#t as crate::argv::FromArg>::from_arg),
        ),
        (None, _, None) => (quote!(), quote!(), quote!()),
    };
    let read = match shape {
        Shape::Flag => Read::Value(quote!(m.flag(#id))),
        Shape::Option(_) => Read::Value(quote!(m.#one(#id, #parser))),
        Shape::Vec(_) => Read::Value(quote!(m.#many(#id, #parser))),
        Shape::Plain(_) => match &a.default_value_t {
            Some(e) => Read::Value(quote!(match m.#one(#id, #parser) {
                ::core::option::Option::Some(v) => v,
                ::core::option::Option::None => #e,
            })),
            None => Read::Required(quote!(m.#one(#id, #parser))),
        },
    };
    Ok((spec, read))
}

/// How the derived `from_matches` gets a field: a value it can use as it is,
/// or an `Option` that must be `Some` (the parser checked it was given; it is
/// `None` only when its value did not parse).
enum Read {
    Value(Tokens),
    Required(Tokens),
}

/// The `Args` impl of a struct: its group and its `from_matches`.
fn args_impl(input: &DeriveInput, c: &CommandAttrs) -> syn::Result<Tokens> {
    let Data::Struct(s) = &input.data else {
        return Err(syn::Error::new(input.span(), "Args is derived for structs"));
    };
    let Fields::Named(fields) = &s.fields else {
        return Err(syn::Error::new(input.span(), "Args needs named fields"));
    };
    let (mut args, mut flatten, mut flatten_at) = (Vec::new(), Vec::new(), Vec::new());
    // Every field is read into a local first, with no early return: an error
    // is kept in the matches and checked once, so a struct costs a call per
    // field rather than a call and an error path (with the drops of the fields
    // read so far) per field.
    let (mut locals, mut names, mut required) = (Vec::new(), Vec::new(), Vec::new());
    let mut subcommands = quote!(&[]);
    let mut sub_required = false;
    for (i, field) in fields.named.iter().enumerate() {
        let fc = command_attrs(&field.attrs)?;
        let ident = &field.ident;
        let local = quote::format_ident!("__f{}", i);
        let ty = &field.ty;
        let read = if fc.flatten {
            flatten.push(quote!(&<#ty as crate::argv::Args>::GROUP));
            flatten_at.push(args.len());
            Read::Required(quote!(<#ty as crate::argv::Args>::from_matches(m)))
        } else if fc.subcommand {
            let (t, read) = match inner(ty, "Option") {
                Some(t) => (t, Read::Value(quote!(m.sub_command::<#t>()))),
                None => {
                    sub_required = true;
                    (ty, Read::Required(quote!(m.sub_command::<#ty>())))
                }
            };
            subcommands = quote!(<#t as crate::argv::Subcommand>::COMMANDS);
            read
        } else {
            let (spec, read) = arg_field(field)?;
            args.push(spec);
            read
        };
        match read {
            Read::Value(e) => locals.push(quote!(let #local = #e;)),
            Read::Required(e) => {
                locals.push(quote!(let #local = #e;));
                required.push(local.clone());
            }
        }
        names.push(quote!(#ident: #local));
    }
    let build = quote!(::core::option::Option::Some(Self { #(#names),* }));
    let finish = if required.is_empty() {
        quote!(if m.ok() { #build } else { ::core::option::Option::None })
    } else {
        quote!(match (#(#required,)*) {
            (#(::core::option::Option::Some(#required),)*) if m.ok() => #build,
            _ => ::core::option::Option::None,
        })
    };
    let groups = c.groups.iter().map(|(id, required, members)| {
        quote!(crate::argv::spec::ArgGroup { id: #id, args: &[#(#members),*], required: #required })
    });
    let name = &input.ident;
    let (imp, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #imp crate::argv::Args for #name #ty_generics #where_clause {
            const GROUP: crate::argv::spec::Group = crate::argv::spec::Group {
                args: &[#(#args),*],
                flatten: &[#(#flatten),*],
                flatten_at: &[#(#flatten_at),*],
                subcommands: #subcommands,
                subcommand_required: #sub_required,
                groups: &[#(#groups),*],
            };
            fn from_matches(m: &mut crate::argv::Matches) -> ::core::option::Option<Self> {
                #(#locals)*
                #finish
            }
        }
    })
}

pub(crate) fn expand_args(input: &DeriveInput) -> syn::Result<Tokens> {
    let c = command_attrs(&input.attrs)?;
    args_impl(input, &c)
}

pub(crate) fn expand_parser(input: &DeriveInput) -> syn::Result<Tokens> {
    let c = command_attrs(&input.attrs)?;
    let args = args_impl(input, &c)?;
    let name = &input.ident;
    let command = c.name.clone().unwrap_or_else(|| kebab(name));
    let (short, long) = doc(&input.attrs);
    let about = match (&c.about, short.is_empty()) {
        (Some(Some(e)), _) => quote!(#e),
        (_, false) => quote!(#short),
        (_, true) => quote!(env!("CARGO_PKG_DESCRIPTION")),
    };
    let long_about = long_about(&c, &long);
    let version = opt(c.version.as_ref());
    let (imp, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        #args
        impl #imp crate::argv::Parser for #name #ty_generics #where_clause {
            const COMMAND: crate::argv::spec::Command = crate::argv::spec::Command {
                name: #command,
                about: #about,
                long_about: #long_about,
                version: #version,
                hide: false,
                args: &<Self as crate::argv::Args>::GROUP,
            };
        }
    })
}

pub(crate) fn expand_subcommand(input: &DeriveInput) -> syn::Result<Tokens> {
    let Data::Enum(e) = &input.data else {
        return Err(syn::Error::new(
            input.span(),
            "Subcommand is derived for enums",
        ));
    };
    let (mut commands, mut arms) = (Vec::new(), Vec::new());
    for v in &e.variants {
        let c = command_attrs(&v.attrs)?;
        let vname = &v.ident;
        let name = c.name.clone().unwrap_or_else(|| kebab(vname));
        let (short, long) = doc(&v.attrs);
        let long_about = long_about(&c, &long);
        let (group, build) = match &v.fields {
            Fields::Unit => (
                quote!(&crate::argv::spec::Group::EMPTY),
                quote!(::core::option::Option::Some(Self::#vname)),
            ),
            Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                let ty = &f.unnamed[0].ty;
                if c.subcommand {
                    (
                        quote!(&crate::argv::spec::Group {
                            subcommands: <#ty as crate::argv::Subcommand>::COMMANDS,
                            subcommand_required: true,
                            ..crate::argv::spec::Group::EMPTY
                        }),
                        quote!(m.sub_command::<#ty>().map(Self::#vname)),
                    )
                } else {
                    (
                        quote!(&<#ty as crate::argv::Args>::GROUP),
                        quote!(<#ty as crate::argv::Args>::from_matches(m).map(Self::#vname)),
                    )
                }
            }
            _ => {
                return Err(syn::Error::new(
                    v.span(),
                    "a subcommand variant holds one Args struct or nothing",
                ));
            }
        };
        let hide = c.hide;
        commands.push(quote! {
            crate::argv::spec::Command {
                name: #name,
                about: #short,
                long_about: #long_about,
                version: ::core::option::Option::None,
                hide: #hide,
                args: #group,
            }
        });
        arms.push(quote!(#name => #build,));
    }
    let name = &input.ident;
    let (imp, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #imp crate::argv::Subcommand for #name #ty_generics #where_clause {
            const COMMANDS: &'static [crate::argv::spec::Command] = &[#(#commands),*];
            fn from_matches(name: &str, m: &mut crate::argv::Matches) -> ::core::option::Option<Self> {
                match name {
                    #(#arms)*
                    other => {
                        m.fail(crate::argv::Error::unknown_subcommand(other));
                        ::core::option::Option::None
                    }
                }
            }
        }
    })
}

pub(crate) fn expand_value_enum(input: &DeriveInput) -> syn::Result<Tokens> {
    let Data::Enum(e) = &input.data else {
        return Err(syn::Error::new(
            input.span(),
            "ValueEnum is derived for enums",
        ));
    };
    let (mut values, mut all, mut index) = (Vec::new(), Vec::new(), Vec::new());
    for (i, v) in e.variants.iter().enumerate() {
        if !matches!(v.fields, Fields::Unit) {
            return Err(syn::Error::new(
                v.span(),
                "ValueEnum variants have no fields",
            ));
        }
        let (mut name, mut hide) = (kebab(&v.ident), false);
        for attr in v.attrs.iter().filter(|a| a.path().is_ident("value")) {
            attr.parse_nested_meta(|meta| {
                match key(&meta).as_str() {
                    "name" => name = string(&meta)?,
                    "hide" => hide = boolean(&meta)?,
                    other => return Err(unsupported(&meta, other)),
                }
                Ok(())
            })?;
        }
        let (help, _) = doc(&v.attrs);
        let vname = &v.ident;
        values.push(quote!(crate::argv::spec::Value { name: #name, help: #help, hide: #hide }));
        all.push(quote!(Self::#vname));
        index.push(quote!(Self::#vname => #i,));
    }
    let name = &input.ident;
    Ok(quote! {
        impl crate::argv::ValueEnum for #name {
            const VALUES: &'static [crate::argv::spec::Value] = &[#(#values),*];
            const ALL: &'static [Self] = &[#(#all),*];
            fn index(self) -> usize {
                match self { #(#index)* }
            }
        }
    })
}
