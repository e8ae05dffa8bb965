//! `--output-schema`: a small JSON Schema validator for the final answer, pure.
//!
//! It checks the subset that answers to scripts use: `type` (one or a list), `properties`,
//! `required`, `additionalProperties` (a boolean or a schema), `items`, `minItems`/`maxItems`,
//! `enum`, `const`, `minimum`/`maximum`, `exclusiveMinimum`/`exclusiveMaximum` (numbers),
//! `minLength`/`maxLength` (in characters), `anyOf`, and local `$ref`s (`#/$defs/…`,
//! `#/definitions/…`). Everything else (`pattern`, `format`, `allOf`, `oneOf`, `not`,
//! `if`/`then`, remote refs, …) is accepted and not checked; docs/scripting.md says so.
//!
//! `check_schema` runs once on the file, so a schema that could not mean anything is a usage
//! error before the server is asked; `validate` lists every place an answer breaks it.

use serde_json::{Map, Value};

/// How deep `$ref`s and nesting may go before a schema counts as looping.
const MAX_DEPTH: usize = 64;

/// The type names JSON Schema knows.
const TYPES: [&str; 7] = [
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// Err(what is wrong, and where in the schema) when `schema` is not one this validator can use.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    if !schema.is_object() {
        return Err("the schema must be a JSON object".into());
    }
    check_node(schema, schema, "#", 0)
}

fn check_node(root: &Value, node: &Value, at: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{at}: nested too deeply"));
    }
    let map = match node {
        Value::Object(map) => map,
        Value::Bool(_) => return Ok(()),
        _ => return Err(format!("{at}: a schema must be an object or a boolean")),
    };
    let wrong = |key: &str, what: &str| Err(format!("{at}/{key}: must be {what}"));
    if let Some(kind) = map.get("type") {
        let names: Vec<&Value> = match kind {
            Value::Array(list) if !list.is_empty() => list.iter().collect(),
            Value::String(_) => vec![kind],
            _ => return wrong("type", "a type name or a list of them"),
        };
        for name in names {
            match name.as_str() {
                Some(name) if TYPES.contains(&name) => {}
                _ => return wrong("type", &format!("one of {}", TYPES.join(", "))),
            }
        }
    }
    if let Some(properties) = map.get("properties") {
        let Some(properties) = properties.as_object() else {
            return wrong("properties", "an object");
        };
        for (name, sub) in properties {
            check_node(root, sub, &format!("{at}/properties/{name}"), depth + 1)?;
        }
    }
    if let Some(required) = map.get("required") {
        match required.as_array() {
            Some(list) if list.iter().all(Value::is_string) => {}
            _ => return wrong("required", "a list of property names"),
        }
    }
    for key in ["additionalProperties", "items"] {
        if let Some(sub) = map.get(key) {
            check_node(root, sub, &format!("{at}/{key}"), depth + 1)?;
        }
    }
    if let Some(any) = map.get("anyOf") {
        let Some(list) = any.as_array().filter(|l| !l.is_empty()) else {
            return wrong("anyOf", "a non-empty list of schemas");
        };
        for (i, sub) in list.iter().enumerate() {
            check_node(root, sub, &format!("{at}/anyOf/{i}"), depth + 1)?;
        }
    }
    if let Some(list) = map.get("enum") {
        if !list.is_array() {
            return wrong("enum", "a list of values");
        }
    }
    for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
        if map.get(key).is_some_and(|v| !v.is_number()) {
            return wrong(key, "a number");
        }
    }
    for key in ["minLength", "maxLength", "minItems", "maxItems"] {
        if map.get(key).is_some_and(|v| !v.is_u64()) {
            return wrong(key, "a whole number");
        }
    }
    if let Some(reference) = map.get("$ref") {
        let Some(reference) = reference.as_str() else {
            return wrong("$ref", "a string");
        };
        resolve(root, reference).map_err(|e| format!("{at}/$ref: {e}"))?;
    }
    for key in ["$defs", "definitions"] {
        if let Some(defs) = map.get(key) {
            let Some(defs) = defs.as_object() else {
                return wrong(key, "an object");
            };
            for (name, sub) in defs {
                check_node(root, sub, &format!("{at}/{key}/{name}"), depth + 1)?;
            }
        }
    }
    Ok(())
}

/// The schema a local `$ref` names.
fn resolve<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, String> {
    let Some(pointer) = reference.strip_prefix('#') else {
        return Err(format!(
            "only local references (#/…) are supported, not '{reference}'"
        ));
    };
    root.pointer(pointer)
        .ok_or_else(|| format!("'{reference}' names nothing in the schema"))
}

/// Every way `value` breaks `schema` (which passed `check_schema`), each as `path: problem`;
/// empty when it matches.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    walk(schema, schema, value, "$", 0, &mut errors);
    errors
}

fn walk(
    root: &Value,
    node: &Value,
    value: &Value,
    at: &str,
    depth: usize,
    errors: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        errors.push(format!("{at}: the schema's references loop"));
        return;
    }
    let map: &Map<String, Value> = match node {
        Value::Object(map) => map,
        Value::Bool(true) => return,
        Value::Bool(false) => return errors.push(format!("{at}: no value is allowed here")),
        _ => return,
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        match resolve(root, target) {
            Ok(sub) => walk(root, sub, value, at, depth + 1, errors),
            Err(e) => errors.push(format!("{at}: {e}")),
        }
    }
    if let Some(kind) = map.get("type") {
        let allowed: Vec<&str> = match kind {
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            other => other.as_str().into_iter().collect(),
        };
        if !allowed.iter().any(|t| has_type(value, t)) {
            errors.push(format!(
                "{at}: expected {}, got {}",
                allowed.join(" or "),
                type_of(value)
            ));
            // The other keywords would only repeat the same mistake.
            return;
        }
    }
    if let Some(expected) = map.get("const") {
        if !same(value, expected) {
            errors.push(format!("{at}: must be {expected}"));
        }
    }
    if let Some(list) = map.get("enum").and_then(Value::as_array) {
        if !list.iter().any(|v| same(value, v)) {
            let shown: Vec<String> = list.iter().map(Value::to_string).collect();
            errors.push(format!("{at}: must be one of {}", shown.join(", ")));
        }
    }
    if let Some(n) = value.as_f64() {
        let bound = |key: &str| map.get(key).and_then(Value::as_f64);
        if let Some(min) = bound("minimum").filter(|min| n < *min) {
            errors.push(format!("{at}: {value} is less than the minimum {min}"));
        }
        if let Some(max) = bound("maximum").filter(|max| n > *max) {
            errors.push(format!("{at}: {value} is more than the maximum {max}"));
        }
        if let Some(min) = bound("exclusiveMinimum").filter(|min| n <= *min) {
            errors.push(format!("{at}: {value} must be more than {min}"));
        }
        if let Some(max) = bound("exclusiveMaximum").filter(|max| n >= *max) {
            errors.push(format!("{at}: {value} must be less than {max}"));
        }
    }
    if let Some(text) = value.as_str() {
        let len = text.chars().count() as u64;
        if let Some(min) = map.get("minLength").and_then(Value::as_u64) {
            if len < min {
                errors.push(format!("{at}: shorter than {min} characters"));
            }
        }
        if let Some(max) = map.get("maxLength").and_then(Value::as_u64) {
            if len > max {
                errors.push(format!("{at}: longer than {max} characters"));
            }
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as u64;
        if let Some(min) = map.get("minItems").and_then(Value::as_u64) {
            if len < min {
                errors.push(format!("{at}: fewer than {min} items"));
            }
        }
        if let Some(max) = map.get("maxItems").and_then(Value::as_u64) {
            if len > max {
                errors.push(format!("{at}: more than {max} items"));
            }
        }
        if let Some(sub) = map.get("items") {
            for (i, item) in items.iter().enumerate() {
                walk(root, sub, item, &format!("{at}[{i}]"), depth + 1, errors);
            }
        }
    }
    if let Some(object) = value.as_object() {
        let properties = map.get("properties").and_then(Value::as_object);
        for name in map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(name) {
                errors.push(format!("{at}: missing required property '{name}'"));
            }
        }
        for (name, item) in object {
            let path = format!("{at}.{name}");
            match properties.and_then(|p| p.get(name)) {
                Some(sub) => walk(root, sub, item, &path, depth + 1, errors),
                None => match map.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        errors.push(format!("{at}: property '{name}' is not allowed"))
                    }
                    Some(sub) => walk(root, sub, item, &path, depth + 1, errors),
                    None => {}
                },
            }
        }
    }
    if let Some(list) = map.get("anyOf").and_then(Value::as_array) {
        let fits = list.iter().any(|sub| {
            let mut inner = Vec::new();
            walk(root, sub, value, at, depth + 1, &mut inner);
            inner.is_empty()
        });
        if !fits {
            errors.push(format!("{at}: matches none of the anyOf choices"));
        }
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

/// JSON equality where 1 and 1.0 are the same number, as JSON Schema says.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The JSON value in a model's answer: the whole text, or the one fenced block it wraps the
/// value in (models add fences even when asked not to).
pub fn parse_answer(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|body| {
            // Drop the info string (```json).
            let body = body.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
            body.trim()
        })
        .unwrap_or(trimmed);
    if inner.is_empty() {
        return Err("the answer was empty".into());
    }
    serde_json::from_str(inner).map_err(|e| {
        let shown: String = inner.chars().take(200).collect();
        format!("the answer is not JSON ({e}): {shown}")
    })
}

/// A name for `response_format`: the schema's title or the file's stem, in the characters
/// OpenAI allows (letters, digits, `_`, `-`; at most 64).
pub fn name(schema: &Value, stem: &str) -> String {
    let source = schema
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(stem);
    let name: String = source
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.trim_matches('_').is_empty() {
        "answer".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value, value: Value) -> Vec<String> {
        check_schema(&schema).expect("a usable schema");
        validate(&schema, &value)
    }

    #[test]
    fn a_matching_answer_has_no_errors() {
        let schema = json!({
            "type": "object",
            "properties": {
                "files": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "count": {"type": "integer", "minimum": 0},
                "status": {"enum": ["ok", "failed"]},
                "note": {"type": ["string", "null"], "maxLength": 10}
            },
            "required": ["files", "count", "status"],
            "additionalProperties": false
        });
        let answer = json!({"files": ["a.rs"], "count": 3, "status": "ok", "note": null});
        assert_eq!(errors(schema, answer), Vec::<String>::new());
    }

    #[test]
    fn every_keyword_reports_its_own_breach() {
        let cases = [
            (
                json!({"type": "string"}),
                json!(1),
                "$: expected string, got a number",
            ),
            (
                json!({"type": "integer"}),
                json!(1.5),
                "$: expected integer, got a number",
            ),
            (json!({"const": 2}), json!(3), "$: must be 2"),
            (
                json!({"enum": ["a", "b"]}),
                json!("c"),
                "$: must be one of \"a\", \"b\"",
            ),
            (
                json!({"minimum": 1}),
                json!(0),
                "$: 0 is less than the minimum 1",
            ),
            (
                json!({"maximum": 1}),
                json!(2),
                "$: 2 is more than the maximum 1",
            ),
            (
                json!({"exclusiveMinimum": 1}),
                json!(1),
                "$: 1 must be more than 1",
            ),
            (
                json!({"exclusiveMaximum": 1}),
                json!(1),
                "$: 1 must be less than 1",
            ),
            (
                json!({"minLength": 2}),
                json!("é"),
                "$: shorter than 2 characters",
            ),
            (
                json!({"maxLength": 1}),
                json!("ab"),
                "$: longer than 1 characters",
            ),
            (json!({"minItems": 1}), json!([]), "$: fewer than 1 items"),
            (json!({"maxItems": 0}), json!([1]), "$: more than 0 items"),
            (
                json!({"items": {"type": "number"}}),
                json!([1, "x"]),
                "$[1]: expected number, got a string",
            ),
            (
                json!({"required": ["a"]}),
                json!({}),
                "$: missing required property 'a'",
            ),
            (
                json!({"properties": {"a": {"type": "boolean"}}}),
                json!({"a": 1}),
                "$.a: expected boolean, got a number",
            ),
            (
                json!({"additionalProperties": false}),
                json!({"x": 1}),
                "$: property 'x' is not allowed",
            ),
            (
                json!({"additionalProperties": {"type": "string"}}),
                json!({"x": 1}),
                "$.x: expected string, got a number",
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!(1),
                "$: matches none of the anyOf choices",
            ),
            (
                json!({"$defs": {"n": {"type": "number"}}, "items": {"$ref": "#/$defs/n"}}),
                json!(["x"]),
                "$[0]: expected number, got a string",
            ),
            (json!({"not": {}, "pattern": "^a"}), json!("b"), ""),
        ];
        for (schema, value, expected) in cases {
            let got = errors(schema.clone(), value.clone());
            let want: Vec<String> = if expected.is_empty() {
                vec![]
            } else {
                vec![expected.to_string()]
            };
            assert_eq!(got, want, "schema {schema}, value {value}");
        }
    }

    #[test]
    fn integers_may_be_written_as_whole_floats_and_numbers_compare_by_value() {
        assert!(errors(json!({"type": "integer"}), json!(2.0)).is_empty());
        assert!(errors(json!({"const": 1}), json!(1.0)).is_empty());
        assert!(errors(json!({"enum": [[1, {"a": 2}]]}), json!([1.0, {"a": 2}])).is_empty());
    }

    #[test]
    fn all_errors_are_listed_with_their_paths() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "integer"}}},
            "required": ["a", "c"]
        });
        let got = errors(schema, json!({"a": 1, "b": [1, "2", 3.5]}));
        assert_eq!(
            got,
            [
                "$: missing required property 'c'",
                "$.a: expected string, got a number",
                "$.b[1]: expected integer, got a string",
                "$.b[2]: expected integer, got a number",
            ]
        );
    }

    #[test]
    fn unusable_schemas_are_refused_with_where() {
        let cases = [
            (json!([]), "the schema must be a JSON object"),
            (
                json!({"type": "text"}),
                "#/type: must be one of object, array, string, number, integer, boolean, null",
            ),
            (
                json!({"type": []}),
                "#/type: must be a type name or a list of them",
            ),
            (json!({"properties": []}), "#/properties: must be an object"),
            (
                json!({"properties": {"a": 3}}),
                "#/properties/a: a schema must be an object or a boolean",
            ),
            (
                json!({"required": "a"}),
                "#/required: must be a list of property names",
            ),
            (
                json!({"anyOf": []}),
                "#/anyOf: must be a non-empty list of schemas",
            ),
            (json!({"enum": 1}), "#/enum: must be a list of values"),
            (json!({"minimum": "1"}), "#/minimum: must be a number"),
            (
                json!({"maxLength": -1}),
                "#/maxLength: must be a whole number",
            ),
            (
                json!({"$ref": "other.json#/a"}),
                "#/$ref: only local references (#/…) are supported, not 'other.json#/a'",
            ),
            (
                json!({"$ref": "#/$defs/none"}),
                "#/$ref: '#/$defs/none' names nothing in the schema",
            ),
            (
                json!({"items": {"additionalProperties": 1}}),
                "#/items/additionalProperties: a schema must be an object or a boolean",
            ),
        ];
        for (schema, expected) in cases {
            assert_eq!(check_schema(&schema), Err(expected.to_string()), "{schema}");
        }
    }

    #[test]
    fn looping_references_end() {
        let schema = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
        check_schema(&schema).unwrap();
        assert_eq!(
            validate(&schema, &json!(1)),
            ["$: the schema's references loop"]
        );
    }

    #[test]
    fn answers_are_read_with_or_without_fences() {
        assert_eq!(parse_answer(" {\"a\": 1}\n"), Ok(json!({"a": 1})));
        assert_eq!(
            parse_answer("```json\n{\"a\": 1}\n```"),
            Ok(json!({"a": 1}))
        );
        assert_eq!(parse_answer("```\n[1]\n```"), Ok(json!([1])));
        assert_eq!(parse_answer(""), Err("the answer was empty".into()));
        assert!(parse_answer("Sure! {\"a\": 1}")
            .unwrap_err()
            .starts_with("the answer is not JSON"));
    }

    #[test]
    fn names_fit_what_openai_allows() {
        assert_eq!(name(&json!({"title": "Build report"}), "x"), "Build_report");
        assert_eq!(name(&json!({}), "result.schema"), "result_schema");
        assert_eq!(name(&json!({}), "ü"), "answer");
        assert_eq!(name(&json!({}), &"a".repeat(100)).len(), 64);
    }
}
