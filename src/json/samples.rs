//! Types that derive both serde's traits and ours, for the tests that hold our
//! encoders and decoders to serde's on the same values.

use serde::{Deserialize, Serialize};

use super::{Decode, Encode};

#[derive(Debug, PartialEq, Serialize, Deserialize, Encode, Decode)]
pub struct Inner {
    pub a: u32,
    pub b: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<f64>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Encode, Decode)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    Unit,
    Newtype(Inner),
    Tuple(u8, i8),
    StructLike { inner: Inner, n: i64 },
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Encode, Decode)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Tagged {
    OneThing { inner: Inner },
    Two(Inner),
    Three,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Encode, Decode)]
#[serde(tag = "state", content = "why", rename_all = "lowercase")]
pub enum Adjacent {
    Fine,
    Broken(String),
}
