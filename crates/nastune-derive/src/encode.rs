//! `#[derive(Encode)]`: each field is one call into `nastune::json::Writer`, in
//! declaration order, with flattened fields written in place, as serde_json does.

use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, spanned::Spanned};

use crate::{Attrs, Place, attrs, bounded, key_of};

pub(crate) fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let top = attrs(&input.attrs, Place::of(input))?;
    let name = &input.ident;
    let generics = bounded(input, syn::parse_quote!(crate::json::Encode));
    let (imp, ty, wh) = generics.split_for_impl();
    let encode = |body: Tokens| {
        quote! {
            impl #imp crate::json::Encode for #name #ty #wh {
                fn encode(&self, w: &mut crate::json::Writer) { #body }
            }
        }
    };
    // Types written as the fields of an object: `encode` wraps `encode_fields` in
    // braces, and a parent may flatten them.
    let fields_body = match &input.data {
        Data::Struct(s) if matches!(s.fields, Fields::Named(_)) => {
            let access = |f: &syn::Ident| quote!(&self.#f);
            Some(fields(&s.fields, &top, &access)?)
        }
        Data::Enum(e) if top.tag.is_some() && top.content.is_none() => {
            let tag = top.tag.as_deref().unwrap_or_default();
            Some(variants(e, &top, &|key, v| {
                let head = quote!(w.field(#tag, #key););
                Ok(match &v.fields {
                    Fields::Unit => head,
                    Fields::Unnamed(_) => {
                        quote!(#head crate::json::EncodeFields::encode_fields(__0, w);)
                    }
                    Fields::Named(_) => {
                        let a = attrs(&v.attrs, Place::Variant)?;
                        let body = fields(&v.fields, &a, &|f| quote!(#f))?;
                        quote!(#head #body)
                    }
                })
            })?)
        }
        _ => None,
    };
    if let Some(body) = fields_body {
        let whole = encode(quote! {
            w.begin_object();
            crate::json::EncodeFields::encode_fields(self, w);
            w.end_object();
        });
        return Ok(quote! {
            impl #imp crate::json::EncodeFields for #name #ty #wh {
                fn encode_fields(&self, w: &mut crate::json::Writer) { #body }
            }
            #whole
        });
    }
    let body = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => quote!(self.0.encode(w);),
            Fields::Unnamed(f) => {
                let items = (0..f.unnamed.len()).map(syn::Index::from);
                quote!(crate::json::write_tuple(w, &[#(&self.#items),*]);)
            }
            _ => {
                return Err(syn::Error::new(
                    input.span(),
                    "Encode: unit structs are not supported",
                ));
            }
        },
        Data::Enum(e) => match (&top.tag, &top.content) {
            (Some(tag), Some(content)) => variants(e, &top, &|key, v| {
                let inner = content_of(v)?;
                let content = match &v.fields {
                    Fields::Unit => quote!(),
                    _ => quote!(w.key(#content); #inner),
                };
                Ok(quote! {
                    w.begin_object();
                    w.field(#tag, #key);
                    #content
                    w.end_object();
                })
            })?,
            _ => variants(e, &top, &|key, v| {
                let inner = content_of(v)?;
                Ok(match &v.fields {
                    Fields::Unit => quote!(w.string(#key);),
                    Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                        quote!(crate::json::write_variant(w, #key, __0);)
                    }
                    _ => quote! {
                        w.begin_object();
                        w.key(#key);
                        #inner
                        w.end_object();
                    },
                })
            })?,
        },
        Data::Union(_) => {
            return Err(syn::Error::new(
                input.span(),
                "Encode: unions are not supported",
            ));
        }
    };
    Ok(encode(body))
}

/// A variant's content as its own value: the newtype's value, the tuple's array or
/// the struct variant's object (bound as `__0, __1, …` or by field name).
fn content_of(v: &syn::Variant) -> syn::Result<Tokens> {
    Ok(match &v.fields {
        Fields::Unit => quote!(),
        Fields::Unnamed(f) if f.unnamed.len() == 1 => quote!(crate::json::Encode::encode(__0, w);),
        Fields::Unnamed(f) => {
            let items = (0..f.unnamed.len()).map(|i| format_ident!("__{i}"));
            quote!(crate::json::write_tuple(w, &[#(#items),*]);)
        }
        Fields::Named(_) => {
            let a = attrs(&v.attrs, Place::Variant)?;
            let body = fields(&v.fields, &a, &|f| quote!(#f))?;
            quote!(w.begin_object(); #body w.end_object();)
        }
    })
}

type VariantBody<'a> = dyn Fn(&str, &syn::Variant) -> syn::Result<Tokens> + 'a;

/// `match self` with an arm per variant, its fields bound by reference.
fn variants(e: &syn::DataEnum, top: &Attrs, body: &VariantBody) -> syn::Result<Tokens> {
    let mut arms = Tokens::new();
    for v in &e.variants {
        let a = attrs(&v.attrs, Place::Variant)?;
        let key = key_of(&a, &v.ident, top, true)?;
        let ident = &v.ident;
        let pattern = match &v.fields {
            Fields::Unit => quote!(Self::#ident),
            Fields::Unnamed(f) => {
                let binds = (0..f.unnamed.len()).map(|i| format_ident!("__{i}"));
                quote!(Self::#ident(#(#binds),*))
            }
            Fields::Named(f) => {
                let binds = f.named.iter().map(|f| &f.ident);
                quote!(Self::#ident { #(#binds),* })
            }
        };
        let code = body(&key, v)?;
        arms.extend(quote!(#pattern => { #code }));
    }
    Ok(quote!(match self { #arms }))
}

/// One statement per field, in declaration order: `w.field(key, value)`, or the
/// flattened value's own fields, or nothing for a skipped one.
fn fields(
    fields: &Fields,
    top: &Attrs,
    access: &dyn Fn(&syn::Ident) -> Tokens,
) -> syn::Result<Tokens> {
    let mut out = Tokens::new();
    for f in fields {
        let a = attrs(&f.attrs, Place::Field)?;
        if a.skip {
            continue;
        }
        let ident = f
            .ident
            .as_ref()
            .ok_or_else(|| syn::Error::new(f.span(), "named field expected"))?;
        let value = access(ident);
        let key = key_of(&a, ident, top, false)?;
        let write = match (&a.ser_with, a.flatten) {
            (_, true) => quote!(crate::json::EncodeFields::encode_fields(#value, w);),
            (Some(with), false) => quote!(w.key(#key); #with(#value, w);),
            (None, false) => quote!(w.field(#key, #value);),
        };
        out.extend(match &a.skip_if {
            Some(skip_if) => quote!(if !#skip_if(#value) { #write }),
            None => write,
        });
    }
    Ok(out)
}
