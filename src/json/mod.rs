//! Every JSON document nastune reads is decoded here (issue 22: binary size).
//!
//! The text is parsed once into a `serde_json::Value` (one parser in the binary),
//! and each type then takes its fields out of that tree with [`Decode`], derived by
//! `nastune_derive` from the same `#[serde(...)]` attributes that describe its
//! encoding. A derived serde decoder is a generic visitor of about 2 KiB per struct;
//! these are a call per field into the helpers below, which are generic over the
//! field's type only. Strings are moved out of the tree, not copied.
//!
//! Errors name the value, what was expected and where it is (`runs[2].iops`); a
//! syntax error keeps serde_json's line and column.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;

mod encode;
#[cfg(test)]
mod samples;

pub use encode::{
    Encode, EncodeFields, Writer, to_string, to_value, to_vec, write_tuple, write_variant,
};
pub use nastune_derive::Decode;
pub use serde_json::Value;

/// A JSON object, as parsed.
pub type Object = serde_json::Map<String, Value>;

/// A type read from a parsed JSON value.
pub trait Decode: Sized {
    fn decode(v: Value) -> Result<Self, Error>;

    /// The value of a field that is absent: `None` (an error), except for `Option`,
    /// which is `None` then, as with serde.
    fn missing() -> Option<Self> {
        None
    }
}

/// A type read from the fields of an object, which it takes out of the map: what
/// a parent may hold in line (`#[serde(flatten)]`) and what an internally tagged
/// variant holds beside its tag.
pub trait DecodeFields: Sized {
    fn decode_fields(m: &mut Object) -> Result<Self, Error>;
}

/// Decodes `T` from JSON text; trailing characters other than whitespace are an error.
pub fn from_str<T: Decode>(text: &str) -> Result<T, Error> {
    from_slice(text.as_bytes())
}

/// Decodes `T` from JSON bytes (UTF-8 is checked inside strings).
pub fn from_slice<T: Decode>(bytes: &[u8]) -> Result<T, Error> {
    T::decode(parse(bytes)?)
}

/// The one JSON parser: out of line, so every document shares it.
#[inline(never)]
fn parse(bytes: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(bytes).map_err(Error::from)
}

/// Decodes `T` from an already parsed value (smartctl's output, read as a whole first).
pub fn from_value<T: Decode>(value: Value) -> Result<T, Error> {
    T::decode(value)
}

/// Why a document could not be decoded, and where in it. Boxed: every field's
/// `Result` carries one, and a pointer keeps those small (issue 22: binary size).
#[derive(Debug, Clone, PartialEq)]
pub struct Error(Box<Inner>);

#[derive(Debug, Clone, PartialEq)]
struct Inner {
    message: String,
    /// From the value outwards: the innermost key or index first.
    path: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

impl Error {
    #[inline(never)]
    pub fn custom(message: impl fmt::Display) -> Self {
        Error(Box::new(Inner {
            message: message.to_string(),
            path: Vec::new(),
        }))
    }

    #[inline(never)]
    fn invalid_type(v: &Value, expected: &str) -> Self {
        Error::custom(format_args!(
            "invalid type: {}, expected {expected}",
            Unexpected(v)
        ))
    }

    #[inline(never)]
    fn missing_field(key: &str) -> Self {
        Error::custom(format_args!("missing field `{key}`"))
    }

    #[inline(never)]
    pub fn unknown_variant(name: &str, expected: &[&str]) -> Self {
        let list: Vec<String> = expected.iter().map(|e| format!("`{e}`")).collect();
        Error::custom(format_args!(
            "unknown variant `{name}`, expected one of {}",
            list.join(", ")
        ))
    }

    /// The error, inside the field `key` of an object.
    #[must_use]
    #[inline(never)]
    pub fn at(mut self, key: &str) -> Self {
        self.0.path.push(Step::Key(key.to_string()));
        self
    }

    #[must_use]
    #[inline(never)]
    fn at_index(mut self, i: usize) -> Self {
        self.0.path.push(Step::Index(i));
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)?;
        if self.0.path.is_empty() {
            return Ok(());
        }
        f.write_str(" at `")?;
        for (i, step) in self.0.path.iter().rev().enumerate() {
            match step {
                Step::Key(k) if i == 0 => f.write_str(k)?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(n) => write!(f, "[{n}]")?,
            }
        }
        f.write_str("`")
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::custom(e)
    }
}

/// A value as serde names it in its errors.
struct Unexpected<'a>(&'a Value);

impl fmt::Display for Unexpected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "boolean `{b}`"),
            Value::Number(n) if n.is_f64() => write!(f, "floating point `{n}`"),
            Value::Number(n) => write!(f, "integer `{n}`"),
            Value::String(s) => write!(f, "string {s:?}"),
            Value::Array(_) => f.write_str("sequence"),
            Value::Object(_) => f.write_str("map"),
        }
    }
}

// Helpers the derived decoders call. Each takes the field's key as a string so
// that a struct's decoder is a sequence of calls, not a state machine.

/// The object a struct is read from.
pub fn object(v: Value) -> Result<Object, Error> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Error::invalid_type(&other, "an object")),
    }
}

/// A field that must be there (or is an `Option`).
pub fn field<T: Decode>(m: &mut Object, key: &str) -> Result<T, Error> {
    match m.remove(key) {
        Some(v) => T::decode(v).map_err(|e| e.at(key)),
        None => T::missing().ok_or_else(|| Error::missing_field(key)),
    }
}

/// A field with a default: `None` when it is absent.
pub fn opt_field<T: Decode>(m: &mut Object, key: &str) -> Result<Option<T>, Error> {
    m.remove(key)
        .map(|v| T::decode(v).map_err(|e| e.at(key)))
        .transpose()
}

/// A field with `#[serde(default)]`.
pub fn field_or_default<T: Decode + Default>(m: &mut Object, key: &str) -> Result<T, Error> {
    Ok(opt_field(m, key)?.unwrap_or_default())
}

/// A field read by `#[serde(deserialize_with = "f")]`, which must be there.
pub fn field_with<T>(
    m: &mut Object,
    key: &str,
    f: fn(Value) -> Result<T, Error>,
) -> Result<T, Error> {
    opt_field_with(m, key, f)?.ok_or_else(|| Error::missing_field(key))
}

/// A field read by `#[serde(deserialize_with = "f")]` with a default.
pub fn opt_field_with<T>(
    m: &mut Object,
    key: &str,
    f: fn(Value) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    m.remove(key)
        .map(|v| f(v).map_err(|e| e.at(key)))
        .transpose()
}

/// `#[serde(deny_unknown_fields)]`: every key must have been taken.
pub fn no_unknown_fields(m: &Object) -> Result<(), Error> {
    match m.keys().next() {
        Some(k) => Err(Error::custom(format_args!("unknown field `{k}`"))),
        None => Ok(()),
    }
}

/// An internally or adjacently tagged enum's tag, taken out of its object.
pub fn tag(m: &mut Object, key: &str) -> Result<String, Error> {
    field(m, key)
}

/// An externally tagged enum: `"variant"`, or `{"variant": content}`.
pub fn external(v: Value) -> Result<(String, Option<Value>), Error> {
    match v {
        Value::String(name) => Ok((name, None)),
        Value::Object(m) if m.len() == 1 => {
            let (name, content) = m.into_iter().next().unwrap_or_default();
            Ok((name, Some(content)))
        }
        other => Err(Error::invalid_type(
            &other,
            "a variant name or an object with one key",
        )),
    }
}

/// An adjacently tagged enum: `{tag: "variant", content: ...}`.
pub fn adjacent(v: Value, tag_key: &str, content: &str) -> Result<(String, Option<Value>), Error> {
    let mut m = object(v)?;
    let name = tag(&mut m, tag_key)?;
    Ok((name, m.remove(content)))
}

/// A unit variant: no content (or `null`).
pub fn unit_variant(content: Option<Value>) -> Result<(), Error> {
    match content {
        None | Some(Value::Null) => Ok(()),
        Some(other) => Err(Error::invalid_type(&other, "a unit variant")),
    }
}

/// A newtype variant's content.
pub fn content<T: Decode>(content: Option<Value>) -> Result<T, Error> {
    match content {
        Some(v) => T::decode(v),
        None => Err(Error::custom(
            "invalid type: unit variant, expected a value",
        )),
    }
}

/// A struct variant's content: its object.
pub fn struct_content(content: Option<Value>) -> Result<Object, Error> {
    match content {
        Some(v) => object(v),
        None => Err(Error::custom(
            "invalid type: unit variant, expected an object",
        )),
    }
}

/// A tuple's elements, which must be exactly `n`; read with [`element`].
pub fn tuple(v: Option<Value>, n: usize) -> Result<Tuple, Error> {
    match v {
        Some(Value::Array(a)) if a.len() == n => Ok(Tuple(a.into_iter().enumerate())),
        Some(Value::Array(a)) => Err(Error::custom(format_args!(
            "invalid length {}, expected {n} elements",
            a.len()
        ))),
        Some(other) => Err(Error::invalid_type(&other, "a sequence")),
        None => Err(Error::custom(
            "invalid type: unit variant, expected a sequence",
        )),
    }
}

/// The elements of a tuple still to be read.
pub struct Tuple(std::iter::Enumerate<std::vec::IntoIter<Value>>);

/// The next element of a tuple ([`tuple`] checked there are enough).
pub fn element<T: Decode>(t: &mut Tuple) -> Result<T, Error> {
    let (i, v) = t.0.next().unwrap_or((0, Value::Null));
    T::decode(v).map_err(|e| e.at_index(i))
}

// The types that fields hold.

impl Decode for Value {
    fn decode(v: Value) -> Result<Self, Error> {
        Ok(v)
    }
}

impl Decode for bool {
    fn decode(v: Value) -> Result<Self, Error> {
        match v {
            Value::Bool(b) => Ok(b),
            other => Err(Error::invalid_type(&other, "a boolean")),
        }
    }
}

impl Decode for String {
    fn decode(v: Value) -> Result<Self, Error> {
        match v {
            Value::String(s) => Ok(s),
            other => Err(Error::invalid_type(&other, "a string")),
        }
    }
}

impl Decode for PathBuf {
    fn decode(v: Value) -> Result<Self, Error> {
        String::decode(v).map(PathBuf::from)
    }
}

/// An unsigned integer of any width, as u64; the caller narrows it.
fn unsigned(v: &Value, expected: &str) -> Result<u64, Error> {
    match v {
        Value::Number(n) if n.is_u64() => Ok(n.as_u64().unwrap_or_default()),
        Value::Number(n) if n.is_i64() => Err(Error::custom(format_args!(
            "invalid value: integer `{n}`, expected {expected}"
        ))),
        other => Err(Error::invalid_type(other, expected)),
    }
}

/// A signed integer of any width, as i64; the caller narrows it.
fn signed(v: &Value, expected: &str) -> Result<i64, Error> {
    match v {
        Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap_or_default()),
        Value::Number(n) if n.is_u64() => Err(Error::custom(format_args!(
            "invalid value: integer `{n}`, expected {expected}"
        ))),
        other => Err(Error::invalid_type(other, expected)),
    }
}

macro_rules! integers {
    ($read:ident: $($t:ty),*) => {$(
        impl Decode for $t {
            fn decode(v: Value) -> Result<Self, Error> {
                let wide = $read(&v, stringify!($t))?;
                <$t>::try_from(wide).map_err(|_| {
                    Error::custom(format_args!(
                        "invalid value: integer `{wide}`, expected {}",
                        stringify!($t)
                    ))
                })
            }
        }
    )*};
}

integers!(unsigned: u8, u16, u32, u64, usize);
integers!(signed: i8, i16, i32, i64, isize);

impl Decode for f64 {
    fn decode(v: Value) -> Result<Self, Error> {
        match &v {
            Value::Number(n) => Ok(n.as_f64().unwrap_or_default()),
            other => Err(Error::invalid_type(other, "f64")),
        }
    }
}

impl Decode for f32 {
    fn decode(v: Value) -> Result<Self, Error> {
        f64::decode(v).map(|f| f as f32)
    }
}

impl<T: Decode> Decode for Option<T> {
    fn decode(v: Value) -> Result<Self, Error> {
        match v {
            Value::Null => Ok(None),
            v => T::decode(v).map(Some),
        }
    }

    fn missing() -> Option<Self> {
        Some(None)
    }
}

impl<T: Decode> Decode for Box<T> {
    fn decode(v: Value) -> Result<Self, Error> {
        T::decode(v).map(Box::new)
    }
}

impl<T: Decode> Decode for std::collections::VecDeque<T> {
    fn decode(v: Value) -> Result<Self, Error> {
        Vec::decode(v).map(Self::from)
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn decode(v: Value) -> Result<Self, Error> {
        match v {
            Value::Array(a) => a
                .into_iter()
                .enumerate()
                .map(|(i, v)| T::decode(v).map_err(|e| e.at_index(i)))
                .collect(),
            other => Err(Error::invalid_type(&other, "a sequence")),
        }
    }
}

/// A map's key: JSON keys are strings, and serde writes integer keys as their digits.
pub trait Key: Sized {
    fn from_key(k: String) -> Result<Self, Error>;
}

impl Key for String {
    fn from_key(k: String) -> Result<Self, Error> {
        Ok(k)
    }
}

macro_rules! integer_keys {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn from_key(k: String) -> Result<Self, Error> {
                k.parse().map_err(|_| {
                    Error::custom(format_args!(
                        "invalid value: string {k:?}, expected {} as a key",
                        stringify!($t)
                    ))
                })
            }
        }
    )*};
}

integer_keys!(u8, u16, u32, u64, usize, i32, i64);

/// The entries of an object, each value decoded.
fn entries<K: Key, T: Decode>(m: Object) -> impl Iterator<Item = Result<(K, T), Error>> {
    m.into_iter().map(|(k, v)| {
        let value = T::decode(v).map_err(|e| e.at(&k))?;
        Ok((K::from_key(k)?, value))
    })
}

impl<K: Key + Ord, T: Decode> Decode for BTreeMap<K, T> {
    fn decode(v: Value) -> Result<Self, Error> {
        entries(object(v)?).collect()
    }
}

impl<K: Key + Eq + std::hash::Hash, T: Decode> Decode for HashMap<K, T> {
    fn decode(v: Value) -> Result<Self, Error> {
        entries(object(v)?).collect()
    }
}

/// A flattened map takes every key its parent's own fields left.
impl<K: Key + Ord, T: Decode> DecodeFields for BTreeMap<K, T> {
    fn decode_fields(m: &mut Object) -> Result<Self, Error> {
        entries(std::mem::take(m)).collect()
    }
}

impl<A: Decode, B: Decode> Decode for (A, B) {
    fn decode(v: Value) -> Result<Self, Error> {
        let mut t = tuple(Some(v), 2)?;
        Ok((element(&mut t)?, element(&mut t)?))
    }
}

impl<A: Decode, B: Decode, C: Decode> Decode for (A, B, C) {
    fn decode(v: Value) -> Result<Self, Error> {
        let mut t = tuple(Some(v), 3)?;
        Ok((element(&mut t)?, element(&mut t)?, element(&mut t)?))
    }
}

#[cfg(test)]
mod tests {
    //! The derived decoders against serde's, on the same types and documents:
    //! serde is the known truth for what the attributes mean.
    use super::samples::{Adjacent, Inner, Shape, Tagged};
    use super::*;
    use serde::Deserialize;

    /// Missing fields, and the skipped one, come from the container's default.
    #[derive(Debug, PartialEq, Deserialize, Decode)]
    #[serde(default)]
    struct Defaults {
        x: u64,
        y: String,
        #[serde(skip)]
        z: u8,
    }

    impl Default for Defaults {
        fn default() -> Self {
            Defaults {
                x: 3,
                y: "unset".into(),
                z: 42,
            }
        }
    }

    fn seven() -> u8 {
        7
    }

    fn doubled(v: Value) -> Result<u64, Error> {
        u64::decode(v).map(|n| n * 2)
    }

    #[derive(Debug, PartialEq, Deserialize, Decode)]
    #[serde(rename_all = "kebab-case")]
    struct Outer {
        inner_one: Inner,
        list: Vec<Inner>,
        map: BTreeMap<String, Inner>,
        by_number: BTreeMap<u32, bool>,
        shapes: Vec<Shape>,
        tagged: Vec<Tagged>,
        adjacent: Vec<Adjacent>,
        #[serde(rename = "pair")]
        two: (i8, f64),
        #[serde(default)]
        absent: Vec<u8>,
        #[serde(default = "seven")]
        seven: u8,
        #[serde(skip)]
        skipped: u16,
        defaults: Defaults,
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }

    const DOC: &str = r#"{
        "inner-one": {"a": 1, "b": "x"},
        "list": [{"a": 2, "b": null}],
        "map": {"k": {"a": 3}},
        "by-number": {"17": true},
        "shapes": ["unit", {"newtype": {"a": 4}}, {"tuple": [5, 6]}, {"struct_like": {"inner": {"a": 7}, "n": -8}}],
        "tagged": [{"kind": "one-thing", "inner": {"a": 9}}, {"kind": "two", "a": 10}, {"kind": "three"}],
        "adjacent": [{"state": "fine"}, {"state": "broken", "why": "disk"}],
        "pair": [-3, 2.5],
        "defaults": {"y": "set"},
        "extra": [1, {"x": true}]
    }"#;

    #[test]
    fn decodes_what_serde_decodes() {
        let theirs: Outer = serde_json::from_str(DOC).expect("serde decodes");
        let ours: Outer = from_str(DOC).expect("ours decodes");
        assert_eq!(ours, theirs);
        assert_eq!(ours.seven, 7);
        assert_eq!(
            ours.defaults,
            Defaults {
                x: 3,
                y: "set".into(),
                z: 42
            }
        );
        assert_eq!(ours.rest.keys().collect::<Vec<_>>(), ["extra"]);
        assert_eq!(ours.skipped, 0);
    }

    /// Each case is refused by serde too; ours says where.
    #[test]
    fn errors_name_the_value_and_where_it_is() {
        let cases = [
            (
                r#"{"a": "one"}"#,
                "invalid type: string \"one\", expected u32 at `a`",
            ),
            (r#"{"b": "x"}"#, "missing field `a`"),
            (
                r#"{"a": -1}"#,
                "invalid value: integer `-1`, expected u32 at `a`",
            ),
            (
                r#"{"a": 4294967296}"#,
                "invalid value: integer `4294967296`, expected u32 at `a`",
            ),
            (
                r#"{"a": 1.5}"#,
                "invalid type: floating point `1.5`, expected u32 at `a`",
            ),
            (
                r#"{"a": 1, "b": 2}"#,
                "invalid type: integer `2`, expected a string at `b`",
            ),
            ("[1, 2]", "invalid type: sequence, expected an object"),
        ];
        for (text, message) in cases {
            assert!(serde_json::from_str::<Inner>(text).is_err(), "{text}");
            assert_eq!(
                from_str::<Inner>(text).expect_err(text).to_string(),
                message
            );
        }
        let e =
            from_str::<Vec<Shape>>(r#"["unit", {"struct_like": {"inner": {"a": true}, "n": 1}}]"#)
                .expect_err("bool for a number");
        assert_eq!(
            e.to_string(),
            "invalid type: boolean `true`, expected u32 at `[1].inner.a`"
        );
        let e = from_str::<Tagged>(r#"{"kind": "four"}"#).expect_err("unknown variant");
        assert_eq!(
            e.to_string(),
            "unknown variant `four`, expected one of `one-thing`, `two`, `three`"
        );
        let e = from_str::<Tagged>(r#"{"inner": {"a": 1}}"#).expect_err("no tag");
        assert_eq!(e.to_string(), "missing field `kind`");
        let e = from_str::<Inner>("{\"a\": 1} x").expect_err("trailing");
        assert_eq!(e.to_string(), "trailing characters at line 1 column 10");
        let e = from_str::<Inner>("{\n \"a\": 1,").expect_err("cut short");
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    /// `deserialize_with` names a `fn(Value) -> Result<T, Error>` here, not serde's
    /// generic function, so it has no serde twin to compare with.
    #[test]
    fn deserialize_with_reads_the_value_through_the_function() {
        #[derive(Debug, PartialEq, Decode)]
        struct With {
            #[serde(deserialize_with = "doubled")]
            n: u64,
            #[serde(default, deserialize_with = "doubled")]
            m: u64,
        }
        assert_eq!(from_str::<With>(r#"{"n": 21}"#), Ok(With { n: 42, m: 0 }));
        assert_eq!(
            from_str::<With>(r#"{"n": 1, "m": 2}"#),
            Ok(With { n: 2, m: 4 })
        );
        let e = from_str::<With>("{}").expect_err("n is needed");
        assert_eq!(e.to_string(), "missing field `n`");
        let e = from_str::<With>(r#"{"n": "x"}"#).expect_err("a string");
        assert_eq!(
            e.to_string(),
            "invalid type: string \"x\", expected u64 at `n`"
        );
    }

    #[test]
    fn deny_unknown_fields_names_the_field() {
        #[derive(Debug, Deserialize, Decode)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Strict {
            a: u8,
        }
        assert!(serde_json::from_str::<Strict>(r#"{"a": 1, "z": 2}"#).is_err());
        let e = from_str::<Strict>(r#"{"a": 1, "z": 2}"#).expect_err("unknown field");
        assert_eq!(e.to_string(), "unknown field `z`");
        assert!(from_str::<Strict>(r#"{"a": 1}"#).is_ok());
    }
}
