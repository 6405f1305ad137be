//! Decoding JSON straight into a type, naming where it failed. At the bottom of
//! the module graph: stored documents and captured trees (root) both use it.

/// `text` decoded into `T` without a `serde_json::Value` tree of it (10 to 30
/// times the text's size); the error names the path of the bad value
/// (`findings[2].severity: unknown variant …`).
pub fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}
