//! `#[derive(Decode)]` and `#[derive(Encode)]`: nastune's JSON decoders and
//! encoders (issue 22: binary size). Encoding is in `encode.rs`; this file reads
//! the attributes and derives the decoders.
//!
//! serde's derived `Deserialize` compiles a generic visitor per type, with a field
//! identifier enum, duplicate-field checks and the error plumbing inlined: about
//! 2 KiB of machine code per struct, 500 KiB in all. The decoders generated here
//! take an already parsed `serde_json::Value` and move each field out of its object
//! with one call to a helper in `nastune::json` that is generic over the field's
//! *type* only, so a struct costs a few bytes per field.
//!
//! The attributes read are serde's own (`#[serde(...)]`), so one set of attributes
//! describes both directions: `rename`, `rename_all` (snake_case, kebab-case,
//! lowercase), `default`, `default = "path"`, `skip`, `flatten`, `deserialize_with =
//! "path"` (a `fn(Value) -> Result<T, json::Error>`), `serialize_with = "path"` (a
//! `fn(&T, &mut json::Writer)`), `skip_serializing_if = "path"`, `from = "Type"`,
//! `tag`, `tag` with `content`, and `deny_unknown_fields`. Each derive uses the ones
//! of its direction; any other attribute is a compile error rather than a silent
//! difference.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, LitStr, Path, parse_macro_input, spanned::Spanned};

mod encode;

fn derive(input: TokenStream, expand: fn(&DeriveInput) -> syn::Result<Tokens>) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

#[proc_macro_derive(Encode, attributes(serde))]
pub fn derive_encode(input: TokenStream) -> TokenStream {
    derive(input, encode::expand)
}

#[proc_macro_derive(Decode, attributes(serde))]
pub fn derive_decode(input: TokenStream) -> TokenStream {
    derive(input, expand)
}

#[derive(Default)]
pub(crate) struct Attrs {
    pub(crate) rename: Option<String>,
    pub(crate) rename_all: Option<String>,
    pub(crate) default: Option<Option<Path>>,
    pub(crate) skip: bool,
    pub(crate) flatten: bool,
    pub(crate) with: Option<Path>,
    pub(crate) ser_with: Option<Path>,
    pub(crate) skip_if: Option<Path>,
    pub(crate) from: Option<syn::Type>,
    pub(crate) tag: Option<String>,
    pub(crate) content: Option<String>,
    pub(crate) deny_unknown: bool,
}

/// Where an attribute list sits; each place takes only the keys serde gives a
/// meaning there, so a misplaced one is an error instead of being ignored.
#[derive(Clone, Copy)]
pub(crate) enum Place {
    Struct,
    Enum,
    Variant,
    Field,
}

impl Place {
    fn of(input: &DeriveInput) -> Place {
        match input.data {
            Data::Enum(_) => Place::Enum,
            _ => Place::Struct,
        }
    }

    fn allows(self, key: &str) -> bool {
        let keys: &[&str] = match self {
            Place::Struct => &["rename_all", "default", "deny_unknown_fields", "from"],
            Place::Enum => &["rename_all", "tag", "content", "from"],
            Place::Variant => &["rename", "rename_all"],
            Place::Field => &[
                "rename",
                "default",
                "skip",
                "flatten",
                "deserialize_with",
                "serialize_with",
                "skip_serializing_if",
            ],
        };
        keys.contains(&key)
    }
}

pub(crate) fn attrs(list: &[syn::Attribute], place: Place) -> syn::Result<Attrs> {
    let mut a = Attrs::default();
    for attr in list.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            if !place.allows(&key) {
                return Err(meta.error(format!(
                    "nastune's derives do not support serde's `{key}` here"
                )));
            }
            let string = |meta: &syn::meta::ParseNestedMeta| -> syn::Result<LitStr> {
                meta.value()?.parse::<LitStr>()
            };
            match key.as_str() {
                "rename" => a.rename = Some(string(&meta)?.value()),
                "rename_all" => a.rename_all = Some(string(&meta)?.value()),
                "tag" => a.tag = Some(string(&meta)?.value()),
                "content" => a.content = Some(string(&meta)?.value()),
                "skip" => a.skip = true,
                "flatten" => a.flatten = true,
                "deny_unknown_fields" => a.deny_unknown = true,
                "default" if meta.input.peek(syn::Token![=]) => {
                    a.default = Some(Some(string(&meta)?.parse()?))
                }
                "default" => a.default = Some(None),
                "deserialize_with" => a.with = Some(string(&meta)?.parse()?),
                "serialize_with" => a.ser_with = Some(string(&meta)?.parse()?),
                "skip_serializing_if" => a.skip_if = Some(string(&meta)?.parse()?),
                "from" => a.from = Some(string(&meta)?.parse()?),
                _ => {
                    return Err(
                        meta.error(format!("nastune's derives do not support serde's `{key}`"))
                    );
                }
            }
            Ok(())
        })?;
    }
    Ok(a)
}

/// The JSON name of a field (`variant == false`) or variant: its own `rename`, or
/// its container's `rename_all` applied to it as serde does.
pub(crate) fn key_of(
    own: &Attrs,
    ident: &syn::Ident,
    top: &Attrs,
    variant: bool,
) -> syn::Result<String> {
    match &own.rename {
        Some(name) => Ok(name.clone()),
        None => renamed(
            &ident.to_string(),
            top.rename_all.as_deref(),
            variant,
            ident.span(),
        ),
    }
}

fn renamed(name: &str, rule: Option<&str>, variant: bool, span: Span) -> syn::Result<String> {
    let name = name.strip_prefix("r#").unwrap_or(name);
    let snake = || {
        let mut s = String::new();
        for (i, c) in name.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        }
        s
    };
    Ok(match (rule, variant) {
        (None, _) => name.to_string(),
        // serde leaves field names as they are under "lowercase", as under snake_case.
        (Some("lowercase"), false) => name.to_string(),
        (Some("lowercase"), true) => name.to_ascii_lowercase(),
        (Some("snake_case"), false) => name.to_string(),
        (Some("snake_case"), true) => snake(),
        (Some("kebab-case"), false) => name.replace('_', "-"),
        (Some("kebab-case"), true) => snake().replace('_', "-"),
        (Some(other), _) => {
            return Err(syn::Error::new(
                span,
                format!("rename_all = \"{other}\" is not supported"),
            ));
        }
    })
}

/// The type's generics with `bound` on every type parameter.
pub(crate) fn bounded(input: &DeriveInput, bound: syn::TraitBound) -> syn::Generics {
    let mut generics = input.generics.clone();
    for param in generics.type_params_mut() {
        param.bounds.push(bound.clone().into());
    }
    generics
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let top = attrs(&input.attrs, Place::of(input))?;
    let name = &input.ident;
    let generics = bounded(input, syn::parse_quote!(crate::json::Decode));
    let (imp, ty, wh) = generics.split_for_impl();
    if let Some(from) = &top.from {
        return Ok(quote! {
            impl #imp crate::json::Decode for #name #ty #wh {
                fn decode(v: crate::json::Value) -> ::core::result::Result<Self, crate::json::Error> {
                    <#from as crate::json::Decode>::decode(v).map(::core::convert::Into::into)
                }
            }
        });
    }
    // Types read from the fields of an object: `decode` is `decode_fields` on the
    // object, and a parent may flatten them.
    let fields_body = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(_) => Some(struct_body(
                quote!(Self),
                &s.fields,
                &top,
                top.deny_unknown,
            )?),
            _ => None,
        },
        Data::Enum(e) if top.tag.is_some() && top.content.is_none() => {
            let tag = top.tag.as_deref().unwrap_or_default();
            let arms = variant_arms(e, &top, Shape::Internal)?;
            Some(quote! {
                let __name = crate::json::tag(m, #tag)?;
                match __name.as_str() { #arms }
            })
        }
        _ => None,
    };
    if let Some(body) = fields_body {
        return Ok(quote! {
            impl #imp crate::json::DecodeFields for #name #ty #wh {
                fn decode_fields(m: &mut crate::json::Object) -> ::core::result::Result<Self, crate::json::Error> {
                    #body
                }
            }
            impl #imp crate::json::Decode for #name #ty #wh {
                fn decode(v: crate::json::Value) -> ::core::result::Result<Self, crate::json::Error> {
                    let mut m = crate::json::object(v)?;
                    <Self as crate::json::DecodeFields>::decode_fields(&mut m)
                }
            }
        });
    }
    let body = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                quote!(crate::json::Decode::decode(v).map(Self))
            }
            Fields::Unnamed(f) => {
                let n = f.unnamed.len();
                let items = (0..n).map(|_| quote!(crate::json::element(&mut __a)?));
                quote! {
                    let mut __a = crate::json::tuple(Some(v), #n)?;
                    Ok(Self(#(#items),*))
                }
            }
            _ => {
                return Err(syn::Error::new(
                    input.span(),
                    "Decode: unit structs are not supported",
                ));
            }
        },
        Data::Enum(e) => {
            let arms = variant_arms(e, &top, Shape::Content)?;
            let split = match (&top.tag, &top.content) {
                (Some(tag), Some(content)) => quote!(crate::json::adjacent(v, #tag, #content)?),
                _ => quote!(crate::json::external(v)?),
            };
            quote! {
                let (__name, __content) = #split;
                match __name.as_str() { #arms }
            }
        }
        Data::Union(_) => {
            return Err(syn::Error::new(
                input.span(),
                "Decode: unions are not supported",
            ));
        }
    };
    Ok(quote! {
        impl #imp crate::json::Decode for #name #ty #wh {
            fn decode(v: crate::json::Value) -> ::core::result::Result<Self, crate::json::Error> {
                #body
            }
        }
    })
}

/// Where a variant's content is: in the tagged object itself (internally tagged),
/// or in `__content: Option<Value>` (externally or adjacently tagged).
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Internal,
    Content,
}

fn variant_arms(e: &syn::DataEnum, top: &Attrs, shape: Shape) -> syn::Result<Tokens> {
    let mut arms = Tokens::new();
    let mut names = Vec::new();
    for v in &e.variants {
        let a = attrs(&v.attrs, Place::Variant)?;
        let key = key_of(&a, &v.ident, top, true)?;
        let ident = &v.ident;
        let path = quote!(Self::#ident);
        let build = match (&v.fields, shape) {
            (Fields::Unit, Shape::Internal) => quote!(Ok(#path)),
            (Fields::Unit, Shape::Content) => quote!({
                crate::json::unit_variant(__content)?;
                Ok(#path)
            }),
            (Fields::Unnamed(f), Shape::Internal) if f.unnamed.len() == 1 => {
                quote!(crate::json::DecodeFields::decode_fields(m).map(#path))
            }
            (Fields::Unnamed(f), Shape::Content) if f.unnamed.len() == 1 => {
                quote!(crate::json::content(__content).map(#path))
            }
            (Fields::Unnamed(f), Shape::Content) => {
                let n = f.unnamed.len();
                let items = (0..n).map(|_| quote!(crate::json::element(&mut __a)?));
                quote!({
                    let mut __a = crate::json::tuple(__content, #n)?;
                    Ok(#path(#(#items),*))
                })
            }
            (Fields::Named(_), Shape::Internal) => {
                let body = struct_body(path, &v.fields, &a, false)?;
                quote!({ #body })
            }
            (Fields::Named(_), Shape::Content) => {
                let body = struct_body(path, &v.fields, &a, false)?;
                quote!({
                    let mut __m = crate::json::struct_content(__content)?;
                    let m = &mut __m;
                    #body
                })
            }
            (Fields::Unnamed(_), Shape::Internal) => {
                return Err(syn::Error::new(
                    v.span(),
                    "Decode: a tagged tuple variant cannot be decoded",
                ));
            }
        };
        arms.extend(quote!(#key => #build,));
        names.push(key);
    }
    arms.extend(
        quote!(__other => Err(crate::json::Error::unknown_variant(__other, &[#(#names),*])),),
    );
    Ok(arms)
}

/// Whether a field's type is a map (`BTreeMap<…>`, `HashMap<…>`), by its name.
fn is_map(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "BTreeMap" || s.ident == "HashMap"),
        _ => false,
    }
}

/// Statements that take each field out of `m: &mut Object` and build `path { .. }`:
/// the object's own fields first, then flattened ones, which may take what is left.
fn struct_body(
    path: Tokens,
    fields: &Fields,
    top: &Attrs,
    deny_unknown: bool,
) -> syn::Result<Tokens> {
    let mut own = Tokens::new();
    let mut flat = Tokens::new();
    let mut init = Vec::new();
    let container_default = top.default.is_some();
    // A flattened map takes every key left, so it must come after the other
    // flattened fields (serde lets them take theirs first).
    let mut map_flattened = false;
    for (i, f) in fields.iter().enumerate() {
        let a = attrs(&f.attrs, Place::Field)?;
        let ident = f
            .ident
            .as_ref()
            .ok_or_else(|| syn::Error::new(f.span(), "named field expected"))?;
        let ty = &f.ty;
        let var = format_ident!("__f{i}");
        init.push(quote!(#ident: #var));
        let key = key_of(&a, ident, top, false)?;
        let fallback = match (&a.default, container_default) {
            (Some(Some(p)), _) => Some(quote!(.unwrap_or_else(#p))),
            (Some(None), _) => Some(quote!(.unwrap_or_default())),
            (None, true) => Some(quote!(.unwrap_or(__d.#ident))),
            (None, false) => None,
        };
        if a.flatten {
            if map_flattened {
                return Err(syn::Error::new(
                    f.span(),
                    "Decode: a flattened map must be the last flattened field",
                ));
            }
            map_flattened = is_map(ty);
            flat.extend(quote!(let #var: #ty = crate::json::DecodeFields::decode_fields(m)?;));
            continue;
        }
        let expr = match (a.skip, &a.with, fallback) {
            (true, _, _) => match (&a.default, container_default) {
                (Some(Some(p)), _) => quote!(#p()),
                (None, true) => quote!(__d.#ident),
                _ => quote!(::core::default::Default::default()),
            },
            (false, Some(with), Some(fallback)) => {
                quote!(crate::json::opt_field_with(m, #key, #with)? #fallback)
            }
            (false, Some(with), None) => quote!(crate::json::field_with(m, #key, #with)?),
            // The common case, `#[serde(default)]`, in one shared helper per type.
            (false, None, Some(_)) if matches!(a.default, Some(None)) => {
                quote!(crate::json::field_or_default::<#ty>(m, #key)?)
            }
            (false, None, Some(fallback)) => {
                quote!(crate::json::opt_field::<#ty>(m, #key)? #fallback)
            }
            (false, None, None) => quote!(crate::json::field::<#ty>(m, #key)?),
        };
        own.extend(quote!(let #var: #ty = #expr;));
    }
    let default = match &top.default {
        Some(Some(p)) => quote!(let __d: Self = #p();),
        Some(None) => quote!(let __d: Self = ::core::default::Default::default();),
        None => quote!(),
    };
    let deny = deny_unknown.then(|| quote!(crate::json::no_unknown_fields(m)?;));
    Ok(quote! {
        #default
        #own
        #flat
        #deny
        Ok(#path { #(#init),* })
    })
}
