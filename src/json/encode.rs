//! Every JSON document nastune writes is encoded here (issue 22: binary size).
//!
//! [`Encode`] is derived by `nastune_derive` from the same `#[serde(...)]`
//! attributes that [`super::Decode`] reads. It writes into one concrete
//! [`Writer`] that cannot fail, so a struct's encoder is a call per field with no
//! error path; serde's derived `Serialize` is generic over the serializer and
//! checks a `Result` after every field. The text is byte for byte what
//! serde_json's compact encoder writes (the unit tests compare the two).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};

pub use nastune_derive::Encode;

use super::Value;

/// A type written as JSON.
pub trait Encode {
    fn encode(&self, w: &mut Writer);
}

/// A type written as the fields of an object: what a parent may hold in line
/// (`#[serde(flatten)]`) and what an internally tagged variant holds beside its tag.
pub trait EncodeFields {
    fn encode_fields(&self, w: &mut Writer);
}

/// `v` as compact JSON.
pub fn to_string<T: Encode + ?Sized>(v: &T) -> String {
    let mut w = Writer::default();
    v.encode(&mut w);
    w.out
}

/// `v` as compact JSON bytes.
pub fn to_vec<T: Encode + ?Sized>(v: &T) -> Vec<u8> {
    to_string(v).into_bytes()
}

/// `T` as a parsed JSON value (for code that walks a document's fields by name).
pub fn to_value<T: Encode + ?Sized>(v: &T) -> Value {
    let parsed = serde_json::from_str(&to_string(v));
    // Our own text parses unless it nests deeper than serde_json's limit (128),
    // which no nastune type does.
    debug_assert!(parsed.is_ok(), "{parsed:?}");
    parsed.unwrap_or(Value::Null)
}

/// The JSON text being written.
#[derive(Default)]
pub struct Writer {
    out: String,
    /// No value yet in the object or array being written: no comma before the next.
    first: bool,
}

impl Writer {
    pub fn begin_object(&mut self) {
        self.out.push('{');
        self.first = true;
    }

    pub fn end_object(&mut self) {
        self.out.push('}');
        self.first = false;
    }

    fn begin_array(&mut self) {
        self.out.push('[');
        self.first = true;
    }

    fn end_array(&mut self) {
        self.out.push(']');
        self.first = false;
    }

    fn comma(&mut self) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }

    /// An object's key; its value follows.
    pub fn key(&mut self, k: &str) {
        self.comma();
        self.string(k);
        self.out.push(':');
    }

    /// `"key": value` in one call: what a derived encoder writes per field.
    pub fn field<T: Encode + ?Sized>(&mut self, k: &str, v: &T) {
        self.key(k);
        v.encode(self);
    }

    /// An element of an array.
    fn element<T: Encode + ?Sized>(&mut self, v: &T) {
        self.comma();
        v.encode(self);
    }

    /// A string, escaped as serde_json does: `"`, `\` and control characters only.
    pub fn string(&mut self, s: &str) {
        self.out.push('"');
        let mut start = 0;
        for (i, b) in s.bytes().enumerate() {
            let escape = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..=0x1f => "",
                _ => continue,
            };
            self.out.push_str(&s[start..i]);
            if escape.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.out.push_str("\\u00");
                self.out.push(HEX[usize::from(b >> 4)] as char);
                self.out.push(HEX[usize::from(b & 0xf)] as char);
            } else {
                self.out.push_str(escape);
            }
            start = i + 1;
        }
        self.out.push_str(&s[start..]);
        self.out.push('"');
    }

    fn raw(&mut self, text: &str) {
        self.out.push_str(text);
    }

    pub fn null(&mut self) {
        self.out.push_str("null");
    }

    /// A JSON value as it is (serde_json's compact text).
    fn value(&mut self, v: &Value) {
        use std::fmt::Write;
        let _ = write!(self.out, "{v}");
    }
}

/// A sequence of values as a JSON array.
fn array<'a, T: Encode + 'a>(w: &mut Writer, items: impl IntoIterator<Item = &'a T>) {
    w.begin_array();
    for item in items {
        w.element(item);
    }
    w.end_array();
}

// Helpers the derived encoders call for enums.

/// An externally tagged variant with content: `{"name": content}`.
pub fn write_variant<T: Encode + ?Sized>(w: &mut Writer, name: &str, content: &T) {
    w.begin_object();
    w.field(name, content);
    w.end_object();
}

/// A tuple variant's or tuple struct's elements as an array.
pub fn write_tuple(w: &mut Writer, items: &[&dyn Encode]) {
    w.begin_array();
    for item in items {
        w.comma();
        item.encode(w);
    }
    w.end_array();
}

// The types that fields hold.

impl Encode for Value {
    fn encode(&self, w: &mut Writer) {
        w.value(self);
    }
}

impl Encode for bool {
    fn encode(&self, w: &mut Writer) {
        w.raw(if *self { "true" } else { "false" });
    }
}

impl Encode for str {
    fn encode(&self, w: &mut Writer) {
        w.string(self);
    }
}

impl Encode for String {
    fn encode(&self, w: &mut Writer) {
        w.string(self);
    }
}

impl Encode for Path {
    /// serde_json refuses a path that is not UTF-8; it is written lossily here.
    fn encode(&self, w: &mut Writer) {
        w.string(&self.to_string_lossy());
    }
}

impl Encode for PathBuf {
    fn encode(&self, w: &mut Writer) {
        self.as_path().encode(w);
    }
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn encode(&self, w: &mut Writer) {
                w.integer(i128::from(*self));
            }
        }
    )*};
}

integers!(u8, u16, u32, u64, i8, i16, i32, i64);

impl Encode for usize {
    fn encode(&self, w: &mut Writer) {
        (*self as u64).encode(w);
    }
}

impl Encode for isize {
    fn encode(&self, w: &mut Writer) {
        (*self as i64).encode(w);
    }
}

impl Writer {
    /// Every integer type through one function.
    fn integer(&mut self, n: i128) {
        use std::fmt::Write;
        let _ = write!(self.out, "{n}");
    }
}

/// Floats as serde_json writes them (its shortest round-trip text; `null` when
/// not finite), through serde_json itself: the text must stay the same.
impl Encode for f64 {
    fn encode(&self, w: &mut Writer) {
        w.value(&Value::from(*self));
    }
}

/// An f32 keeps its own shortest text (`0.1`, not `0.10000000149011612`).
impl Encode for f32 {
    fn encode(&self, w: &mut Writer) {
        match serde_json::to_string(self) {
            Ok(text) => w.raw(&text),
            Err(_) => w.null(),
        }
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, w: &mut Writer) {
        (**self).encode(w);
    }
}

impl<T: Encode + ?Sized> Encode for Box<T> {
    fn encode(&self, w: &mut Writer) {
        (**self).encode(w);
    }
}

impl<T: Encode> Encode for Option<T> {
    fn encode(&self, w: &mut Writer) {
        match self {
            Some(v) => v.encode(w),
            None => w.null(),
        }
    }
}

impl<T: Encode> Encode for [T] {
    fn encode(&self, w: &mut Writer) {
        array(w, self);
    }
}

impl<T: Encode, const N: usize> Encode for [T; N] {
    fn encode(&self, w: &mut Writer) {
        array(w, self);
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, w: &mut Writer) {
        array(w, self);
    }
}

impl<T: Encode> Encode for VecDeque<T> {
    fn encode(&self, w: &mut Writer) {
        array(w, self);
    }
}

/// A map's key as JSON writes it: a string, integers as their digits.
pub trait Key {
    fn write_key(&self, w: &mut Writer);
}

impl Key for String {
    fn write_key(&self, w: &mut Writer) {
        w.key(self);
    }
}

impl Key for &str {
    fn write_key(&self, w: &mut Writer) {
        w.key(self);
    }
}

macro_rules! integer_keys {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn write_key(&self, w: &mut Writer) {
                w.key(&self.to_string());
            }
        }
    )*};
}

integer_keys!(u8, u16, u32, u64, usize, i32, i64);

fn entries<'a, K: Key + 'a, T: Encode + 'a>(
    w: &mut Writer,
    items: impl IntoIterator<Item = (&'a K, &'a T)>,
) {
    for (k, v) in items {
        k.write_key(w);
        v.encode(w);
    }
}

impl<K: Key, T: Encode> Encode for BTreeMap<K, T> {
    fn encode(&self, w: &mut Writer) {
        w.begin_object();
        entries(w, self);
        w.end_object();
    }
}

impl<K: Key, T: Encode> Encode for HashMap<K, T> {
    fn encode(&self, w: &mut Writer) {
        w.begin_object();
        entries(w, self);
        w.end_object();
    }
}

impl<T: EncodeFields + ?Sized> EncodeFields for &T {
    fn encode_fields(&self, w: &mut Writer) {
        (**self).encode_fields(w);
    }
}

/// A flattened map writes its entries among its parent's fields.
impl<K: Key, T: Encode> EncodeFields for BTreeMap<K, T> {
    fn encode_fields(&self, w: &mut Writer) {
        entries(w, self);
    }
}

impl<A: Encode, B: Encode> Encode for (A, B) {
    fn encode(&self, w: &mut Writer) {
        write_tuple(w, &[&self.0, &self.1]);
    }
}

impl<A: Encode, B: Encode, C: Encode> Encode for (A, B, C) {
    fn encode(&self, w: &mut Writer) {
        write_tuple(w, &[&self.0, &self.1, &self.2]);
    }
}

#[cfg(test)]
mod tests {
    //! The derived encoders against serde's, on the same types and values: the
    //! text must be the same byte for byte (stored documents and goldens).
    use super::*;
    use crate::json::samples::{Adjacent, Inner, Shape, Tagged};
    use serde::Serialize;

    #[derive(Serialize, Encode)]
    #[serde(rename_all = "kebab-case")]
    struct Outer<'a> {
        inner_one: Inner,
        list: Vec<Inner>,
        map: BTreeMap<String, Inner>,
        by_number: BTreeMap<u32, bool>,
        shapes: Vec<Shape>,
        tagged: Vec<Tagged>,
        adjacent: Vec<Adjacent>,
        #[serde(rename = "pair")]
        two: (i8, f64),
        #[serde(skip)]
        #[allow(dead_code)]
        skipped: u16,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        empty: Vec<u8>,
        text: &'a str,
        floats: Vec<f64>,
        small: f32,
        path: PathBuf,
        value: Value,
        #[serde(flatten)]
        flat: Inner,
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }

    fn inner(a: u32) -> Inner {
        Inner {
            a,
            b: Some(format!("x{a}")),
            c: None,
        }
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let outer = Outer {
            inner_one: Inner {
                a: 1,
                b: None,
                c: Some(2.5),
            },
            list: vec![inner(2), inner(3)],
            map: BTreeMap::from([("k".to_string(), inner(4)), ("a b".into(), inner(5))]),
            by_number: BTreeMap::from([(17, true), (3, false)]),
            shapes: vec![
                Shape::Unit,
                Shape::Newtype(inner(6)),
                Shape::Tuple(7, -8),
                Shape::StructLike {
                    inner: inner(9),
                    n: -10,
                },
            ],
            tagged: vec![
                Tagged::OneThing { inner: inner(11) },
                Tagged::Two(inner(12)),
                Tagged::Three,
            ],
            adjacent: vec![Adjacent::Fine, Adjacent::Broken("disk".into())],
            two: (-3, 2.0),
            skipped: 5,
            empty: vec![],
            text: "quote \" backslash \\ newline \n tab \t bell \u{7} del \u{7f} é ∑ /",
            floats: vec![
                0.1,
                1e21,
                1e-7,
                -0.0,
                123456.789,
                f64::NAN,
                f64::INFINITY,
                3.0,
            ],
            small: 0.1,
            path: PathBuf::from("/dev/sda"),
            value: serde_json::json!({"z": [1, 2.5, null, "s"], "a": {}}),
            flat: inner(13),
            rest: BTreeMap::from([("extra".to_string(), Value::from(1))]),
        };
        assert_eq!(
            to_string(&outer),
            serde_json::to_string(&outer).expect("serde")
        );
        let empty: Vec<Inner> = Vec::new();
        assert_eq!(to_string(&empty), "[]");
        assert_eq!(to_string(&BTreeMap::<String, u8>::new()), "{}");
    }

    #[test]
    fn what_is_written_decodes_back() {
        let shapes = vec![Shape::Unit, Shape::Newtype(inner(1)), Shape::Tuple(2, -3)];
        let back: Vec<Shape> = crate::json::from_str(&to_string(&shapes)).expect("decodes");
        assert_eq!(back, shapes);
        let tagged = vec![Tagged::Two(inner(4)), Tagged::Three];
        let back: Vec<Tagged> = crate::json::from_str(&to_string(&tagged)).expect("decodes");
        assert_eq!(back, tagged);
        let adjacent = vec![Adjacent::Fine, Adjacent::Broken("x".into())];
        let back: Vec<Adjacent> = crate::json::from_str(&to_string(&adjacent)).expect("decodes");
        assert_eq!(back, adjacent);
    }

    /// `serialize_with` names a `fn(&T, &mut Writer)` here, not serde's generic
    /// function, so it has no serde twin to compare with.
    #[test]
    fn serialize_with_names_a_function_of_the_writer() {
        fn tenfold(v: &u64, w: &mut Writer) {
            (v * 10).encode(w);
        }
        #[derive(Encode)]
        struct With {
            #[serde(serialize_with = "tenfold")]
            n: u64,
            m: u64,
        }
        assert_eq!(to_string(&With { n: 4, m: 4 }), r#"{"n":40,"m":4}"#);
    }
}
