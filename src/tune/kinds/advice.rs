//! Advice: something only a person can do (move the swap file off the SD
//! card); described and exported as a comment, never applied.

use super::ChangeKind;
use crate::root::Root;
use crate::tune::plan::PlanItem;

pub struct Advice<'a> {
    pub action: &'a str,
}

impl ChangeKind for Advice<'_> {
    fn setting(&self) -> String {
        format!("advice: {}", self.action)
    }

    fn describe(&self) -> String {
        self.action.to_string()
    }

    fn plan(&self, _root: &Root, _item: &mut PlanItem) -> Result<(), String> {
        Err("advice only: never applied automatically".into())
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        vec![("advice", self.action, false)]
    }
}
