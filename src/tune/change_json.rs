//! [`Change`] as the store and `tune export` keep it: what serde writes reads
//! back, and its errors.

use crate::advise::Change;

#[test]
fn every_kind_round_trips_byte_for_byte() {
    // tune::export's list holds every kind, smb_conf with and without a value.
    for change in crate::tune::export::tests::changes() {
        let json = serde_json::to_string(&change).unwrap();
        let back: Change = serde_json::from_str(&json).expect("decodes");
        assert_eq!(back, change, "{json}");
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }
}

#[test]
fn reads_keys_in_any_order_and_ignores_unknown_ones() {
    let json =
        r#"{"value": "10", "note": [1, {"x": 2}], "key": "vm.swappiness", "kind": "sysctl"}"#;
    let change: Change = serde_json::from_str(json).expect("decodes");
    assert_eq!(
        change,
        Change::Sysctl {
            key: "vm.swappiness".into(),
            value: "10".into()
        }
    );
    let absent: Change =
        serde_json::from_str(r#"{"kind": "smb_conf", "section": "g", "parameter": "p"}"#)
            .expect("decodes");
    assert!(matches!(absent, Change::SmbConf { value: None, .. }));
}

#[test]
fn says_what_is_wrong() {
    let err = |json: &str| crate::json::from_json::<Change>(json).expect_err(json);
    assert_eq!(
        err(r#"{"kind": "sysctl", "key": "k"}"#),
        "missing field `value`"
    );
    // No path inside an internally tagged variant: serde buffers its content
    // before reading it, out of the path tracker's sight.
    assert_eq!(
        err(r#"{"kind": "sysctl", "key": "k", "value": null}"#),
        "invalid type: null, expected a string"
    );
    assert!(
        err(r#"{"kind": "reboot"}"#)
            .starts_with("kind: unknown variant `reboot`, expected one of `sysctl`")
    );
    assert_eq!(
        err(r#"{"key": "k"}"#),
        "missing field `kind` at line 1 column 12"
    );
    assert_eq!(
        err("[1, 2]"),
        "[0]: invalid type: integer `1`, expected variant identifier at line 1 column 2"
    );
}
