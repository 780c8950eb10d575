//! A JSON Schema (draft 2020-12 subset) inferred from sample documents,
//! and a validator for exactly the subset it emits: `type` (one name or a
//! list), `properties`, `required`, `additionalProperties` (a boolean),
//! `items` and `description`. Small on purpose: a full validator crate
//! would cost more to build than it checks here.

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// What the samples showed at one place in the document.
#[derive(Default)]
pub struct Shape {
    types: BTreeSet<&'static str>,
    /// Objects seen here, and how many of them had each key.
    objects: usize,
    keys: BTreeMap<String, (usize, Shape)>,
    items: Option<Box<Shape>>,
}

/// The JSON Schema type name of a value ("integer" for whole numbers
/// serde_json holds as integers).
pub fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Shape {
    /// Take one more sample at this place.
    pub fn add(&mut self, v: &Value) {
        self.types.insert(type_of(v));
        match v {
            Value::Object(m) => {
                self.objects += 1;
                for (k, x) in m {
                    let e = self.keys.entry(k.clone()).or_default();
                    e.0 += 1;
                    e.1.add(x);
                }
            }
            Value::Array(a) => {
                let items = self.items.get_or_insert_with(Default::default);
                for x in a {
                    items.add(x);
                }
            }
            _ => {}
        }
    }

    /// The schema: a key is required when every sample object had it;
    /// objects at `open` paths (dotted, `[]` for array items) may have
    /// keys the samples did not show, and only their nested objects are
    /// typed; `describe` gives a path's description, if any.
    pub fn to_schema(
        &self,
        path: &str,
        open: &[&str],
        describe: &dyn Fn(&str) -> Option<&'static str>,
    ) -> Value {
        let mut s = Map::new();
        if let Some(d) = describe(path) {
            s.insert("description".into(), d.into());
        }
        let mut types: Vec<&str> = self.types.iter().copied().collect();
        if types.contains(&"number") {
            types.retain(|t| *t != "integer");
        }
        match types.as_slice() {
            [] => {}
            [one] => {
                s.insert("type".into(), (*one).into());
            }
            many => {
                s.insert("type".into(), json!(many));
            }
        }
        if self.objects > 0 {
            let child = |k: &str| {
                if path.is_empty() {
                    k.to_string()
                } else {
                    format!("{path}.{k}")
                }
            };
            // An open object's scalars may differ in type from run to run
            // (benchmark fields of different workload kinds share names):
            // only its nested objects are described.
            let is_open = open.contains(&path);
            let props: Map<String, Value> = (self.keys.iter())
                .filter(|(_, (_, sh))| !is_open || sh.types.iter().eq(["object"].iter()))
                .map(|(k, (_, sh))| (k.clone(), sh.to_schema(&child(k), open, describe)))
                .collect();
            let required: Vec<&String> = (self.keys.iter())
                .filter(|(_, (n, _))| *n == self.objects)
                .map(|(k, _)| k)
                .collect();
            s.insert("properties".into(), Value::Object(props));
            s.insert("required".into(), json!(required));
            s.insert("additionalProperties".into(), is_open.into());
        }
        if let Some(items) = &self.items {
            s.insert(
                "items".into(),
                items.to_schema(&format!("{path}[]"), open, describe),
            );
        }
        Value::Object(s)
    }
}

/// Every way `v` breaks `schema`, each with its JSON path (`$.a.b[3]`).
pub fn validate(schema: &Value, v: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, v, "$", &mut errors);
    errors
}

fn check(schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let t = type_of(v);
    let allowed = |name: &str| name == t || (name == "number" && t == "integer");
    let ok = match &schema["type"] {
        Value::String(name) => allowed(name),
        Value::Array(names) => names.iter().any(|n| n.as_str().is_some_and(allowed)),
        _ => true,
    };
    if !ok {
        errors.push(format!("{at}: {t}, expected {}", schema["type"]));
        return;
    }
    if let Value::Object(m) = v {
        for r in schema["required"].as_array().into_iter().flatten() {
            if let Some(k) = r.as_str().filter(|k| !m.contains_key(*k)) {
                errors.push(format!("{at}: missing `{k}`"));
            }
        }
        let props = schema["properties"].as_object();
        for (k, x) in m {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => check(sub, x, &format!("{at}.{k}"), errors),
                None if schema["additionalProperties"] == false => {
                    errors.push(format!("{at}: unexpected `{k}`"))
                }
                None => {}
            }
        }
    }
    if let (Value::Array(a), Some(items)) = (v, schema.get("items")) {
        for (i, x) in a.iter().enumerate() {
            check(items, x, &format!("{at}[{i}]"), errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_of(samples: &[Value], open: &[&str]) -> Value {
        let mut sh = Shape::default();
        for s in samples {
            sh.add(s);
        }
        sh.to_schema("", open, &|_| None)
    }

    #[test]
    fn inferred_schema_accepts_its_samples_and_rejects_what_differs() {
        let a = json!({"n": 1, "x": 0.5, "list": [[1, 2]], "opt": "s", "open": {"k": 1, "o": {"p": 1}}});
        let b = json!({"n": 2, "x": 1, "list": [], "open": {"k": "one"}});
        let schema = schema_of(&[a.clone(), b.clone()], &["open"]);
        assert!(validate(&schema, &a).is_empty());
        assert!(validate(&schema, &b).is_empty());
        assert_eq!(schema["required"], json!(["list", "n", "open", "x"]));
        assert_eq!(schema["properties"]["x"]["type"], "number");
        let bad = [
            (json!({"x": 1, "list": [], "open": {}}), "$: missing `n`"),
            (
                json!({"n": "1", "x": 1, "list": [], "open": {}}),
                "$.n: string, expected \"integer\"",
            ),
            (
                json!({"n": 1, "x": 1, "list": [["a"]], "open": {}}),
                "$.list[0][0]: string",
            ),
            (
                json!({"n": 1, "x": 1, "list": [], "open": {}, "new": 1}),
                "$: unexpected `new`",
            ),
        ];
        for (v, want) in bad {
            let errs = validate(&schema, &v);
            assert!(errs.iter().any(|e| e.starts_with(want)), "{v}: {errs:?}");
        }
        // An open object takes keys the samples did not have, and any
        // scalar, but its nested objects are checked.
        let more = json!({"n": 1, "x": 1, "list": [], "open": {"other": true, "k": [1]}});
        assert!(validate(&schema, &more).is_empty());
        let nested = json!({"n": 1, "x": 1, "list": [], "open": {"k": 2, "o": {"p": "1"}}});
        assert_eq!(
            validate(&schema, &nested),
            ["$.open.o.p: string, expected \"integer\""]
        );
    }
}
