//! Every JSON document nastune reads is decoded here (issue 22: binary size).
//!
//! serde_json's `deserialize_struct` takes a JSON array as well as an object, so
//! each derived struct visitor compiles a `visit_seq` next to its `visit_map`: about
//! a third of all decoding code, for a form nastune never writes. [`Maps`] wraps the
//! deserializer, and everything nested below it, so that structs are asked for as
//! maps only. One reader (a byte slice) for every document likewise keeps one copy
//! of each type's decoder instead of one per serde_json reader.
//!
//! Errors are serde_json's own, with its line and column. A struct stored as an
//! array, which nastune never writes, is refused ("expected struct ...").

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use std::fmt;

/// Decodes `T` from JSON text; trailing characters other than whitespace are an error.
pub fn from_str<'a, T: Deserialize<'a>>(text: &'a str) -> serde_json::Result<T> {
    from_slice(text.as_bytes())
}

/// Decodes `T` from JSON bytes (UTF-8 is checked inside strings). Out of line:
/// measured -2.3 KB stripped (issue 22).
#[inline(never)]
pub fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(Maps(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Decodes `T` from an already parsed value (smartctl's output, read as a whole first).
pub fn from_value<'a, T: Deserialize<'a>>(value: &'a serde_json::Value) -> serde_json::Result<T> {
    T::deserialize(Maps(value))
}

/// For decoders written by hand: implements `Deserialize` for `$ty` as a JSON
/// object read by `$visit`, a `fn<'de, A: MapAccess<'de>>(A) -> Result<$ty, A::Error>`.
macro_rules! map_decoder {
    ($ty:ident, $expecting:literal, $visit:ident) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct MapVisitor;
                impl<'de> serde::de::Visitor<'de> for MapVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<$ty, A::Error> {
                        $visit(map)
                    }
                }
                d.deserialize_map(MapVisitor)
            }
        }
    };
}
pub(crate) use map_decoder;

/// For decoders written by hand: stores a field's value; a second one is an
/// error, as with a derived decoder.
pub fn put<T, E: de::Error>(slot: &mut Option<T>, value: T, field: &'static str) -> Result<(), E> {
    match slot.replace(value) {
        Some(_) => Err(E::duplicate_field(field)),
        None => Ok(()),
    }
}

/// For decoders written by hand: a field that must be there.
pub fn need<T, E: de::Error>(slot: Option<T>, field: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(field))
}

/// For decoders written by hand: the fields of a value that its parent's object
/// holds in line (`#[serde(flatten)]`). A derived parent buffers every key it
/// does not know into serde's `Content` and decodes the value again from there,
/// a second copy of its decoder; [`flat`] reads each key once, as it comes.
pub trait Fields<'de>: Default {
    type Value;
    /// Reads `key`'s value when the key is one of these fields; `false` when it
    /// is not, with the value left unread.
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;
    /// The value, once every key has been read.
    fn finish<E: de::Error>(self) -> Result<Self::Value, E>;
}

/// Reads a parent's object: `own` takes the keys of the parent's own fields (it
/// returns `false` for any other), `F` the flattened ones; other keys are ignored.
pub fn flat<'de, F: Fields<'de>, A: MapAccess<'de>>(
    map: &mut A,
    mut own: impl FnMut(&str, &mut A) -> Result<bool, A::Error>,
) -> Result<F::Value, A::Error> {
    let mut fields = F::default();
    while let Some(key) = map.next_key::<String>()? {
        if !own(&key, map)? && !fields.read(&key, map)? {
            map.next_value::<de::IgnoredAny>()?;
        }
    }
    fields.finish()
}

/// A deserializer that asks the inner one for a map wherever a struct is wanted,
/// and passes itself down to every nested value.
struct Maps<D>(D);

/// Methods whose visitor may meet a nested value: the visitor is wrapped.
macro_rules! nested {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method($($arg,)* Wrap(visitor))
        }
    )*};
}

/// Methods that only ever produce a scalar: the visitor goes in as it is.
macro_rules! scalar {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Maps<D> {
    type Error = D::Error;

    nested! {
        deserialize_any();
        deserialize_option();
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
    }

    scalar! {
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    /// The point of the wrapper: a struct is read as a map, never as an array.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// A visitor whose nested deserializers and accessors are wrapped in turn.
struct Wrap<V>(V);

macro_rules! visit {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.0.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }

    visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(Maps(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Maps(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    /// Kept out of line, so each struct's derived `visit_map` is called rather than
    /// inlined into serde_json's reader: measured -70 KB stripped (issue 22).
    /// The same on `visit_seq` and `visit_enum` measured +55 KB, so not there.
    #[inline(never)]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

/// A seed whose deserializer is wrapped: how wrapping reaches nested values.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(Maps(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    /// Keys are strings: nothing nested to wrap.
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(seed)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    /// The variant's name is a string: nothing nested to wrap.
    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(seed)?;
        Ok((value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    /// The inner `struct_variant` would take an array too (see the module doc), so
    /// the variant's content is read as a newtype holding a map.
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.newtype_variant_seed(StructVariant(visitor))
    }
}

/// The content of a struct variant, read as a map.
struct StructVariant<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for StructVariant<V> {
    type Value = V::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(Wrap(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Debug, PartialEq, Deserialize)]
    struct Inner {
        a: u32,
        b: Option<String>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Shape {
        Unit,
        Newtype(Inner),
        Tuple(u8, u8),
        Struct { inner: Inner, n: i64 },
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Tagged {
        One { inner: Inner },
        Two(Inner),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Outer {
        inner: Inner,
        list: Vec<Inner>,
        map: BTreeMap<String, Inner>,
        shapes: Vec<Shape>,
        tagged: Vec<Tagged>,
        #[serde(flatten)]
        rest: BTreeMap<String, serde_json::Value>,
    }

    const DOC: &str = r#"{
        "inner": {"a": 1, "b": "x"},
        "list": [{"a": 2, "b": null}],
        "map": {"k": {"a": 3}},
        "shapes": ["unit", {"newtype": {"a": 4}}, {"tuple": [5, 6]}, {"struct": {"inner": {"a": 7}, "n": -8}}],
        "tagged": [{"kind": "one", "inner": {"a": 9}}, {"kind": "two", "a": 10}],
        "extra": [1, {"x": true}]
    }"#;

    #[test]
    fn decodes_what_serde_json_decodes() {
        let ours: Outer = from_str(DOC).expect("decodes");
        let theirs: Outer = serde_json::from_str(DOC).expect("decodes");
        assert_eq!(ours, theirs);
        assert_eq!(
            ours.shapes[3],
            Shape::Struct {
                inner: Inner { a: 7, b: None },
                n: -8
            }
        );
        assert_eq!(ours.rest["extra"], serde_json::json!([1, {"x": true}]));
        let value: serde_json::Value = serde_json::from_str(DOC).expect("decodes");
        assert_eq!(from_value::<Outer>(&value).expect("decodes"), theirs);
    }

    #[test]
    fn a_struct_stored_as_an_array_is_refused_with_its_position() {
        let e = from_str::<Outer>(r#"{"inner": [1, "x"]}"#).expect_err("array for a struct");
        assert_eq!(
            e.to_string(),
            "invalid type: sequence, expected struct Inner at line 1 column 10"
        );
        // serde_json alone takes it: the wrapper is what refuses it.
        assert!(serde_json::from_str::<Inner>(r#"[1, "x"]"#).is_ok());
        let e = from_str::<Shape>(r#"{"struct": [{"a": 1}, 2]}"#).expect_err("array for a variant");
        assert_eq!(
            e.to_string(),
            "invalid type: sequence, expected struct variant Shape::Struct at line 1 column 11"
        );
    }

    #[test]
    fn errors_keep_serde_jsons_line_and_column() {
        let text = "{\n  \"inner\": {\"a\": \"one\"}\n}";
        let ours = from_str::<Outer>(text)
            .expect_err("string for a number")
            .to_string();
        let theirs = serde_json::from_str::<Outer>(text)
            .expect_err("string for a number")
            .to_string();
        assert_eq!(ours, theirs);
        assert!(ours.contains("line 2 column 22"), "{ours}");
        let missing = from_str::<Inner>("{\"b\": \"x\"}")
            .expect_err("no a")
            .to_string();
        assert_eq!(missing, "missing field `a` at line 1 column 10");
        let trailing = from_str::<Inner>("{\"a\": 1} x")
            .expect_err("trailing")
            .to_string();
        assert_eq!(trailing, "trailing characters at line 1 column 10");
    }

    #[test]
    fn borrows_from_the_input() {
        #[derive(Deserialize)]
        struct Borrowed<'a> {
            name: &'a str,
        }
        let text = String::from(r#"{"name": "sda"}"#);
        let b: Borrowed = from_str(&text).expect("decodes");
        assert_eq!(b.name, "sda");
    }
}
