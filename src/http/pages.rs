//! `limit`/`marker` pagination, the same for every list: `marker` is the id of the last item
//! the client saw, `limit` how many to return; a truncated page links the next one.

use std::collections::HashMap;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Value};

use super::error::{ApiError, ApiResult};

/// The most items one page holds, whatever `limit` asks.
pub const MAX_LIMIT: usize = 10_000;

/// `{key: items, links: {self, previous, next}}`, sliced by the query's `marker` and `limit`.
pub fn page(key: &str, items: Vec<Value>, base: &str, path: &str, q: &HashMap<String, String>) -> ApiResult<Value> {
    let (items, next) = slice(items, q)?;
    let next = next.map(|marker| format!("{base}{path}?{}", with_marker(q, &marker)));
    Ok(json!({key: items, "links": {"self": format!("{base}{path}"), "previous": null, "next": next}}))
}

/// [`page`] for items whose shape has no `id`: each comes with the marker it pages by (a
/// `mapping_id`, a `client_id`, …), which the page does not show.
pub fn page_by(
    key: &str,
    items: Vec<(String, Value)>,
    base: &str,
    path: &str,
    q: &HashMap<String, String>,
) -> ApiResult<Value> {
    let items = items
        .into_iter()
        .map(|(marker, mut v)| {
            v["id"] = json!(marker);
            v
        })
        .collect();
    let mut body = page(key, items, base, path, q)?;
    if let Some(items) = body[key].as_array_mut() {
        items.iter_mut().filter_map(Value::as_object_mut).for_each(|o| {
            o.remove("id");
        });
    }
    Ok(body)
}

/// The query of the page beyond this one: the same parameters, with `marker` moved on.
pub fn with_marker(q: &HashMap<String, String>, marker: &str) -> String {
    let mut params: Vec<(&String, &String)> = q.iter().filter(|(k, _)| *k != "marker").collect();
    params.sort();
    let mut query: Vec<String> = params.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect();
    query.push(format!("marker={}", enc(marker)));
    query.join("&")
}

fn enc(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

/// The query's `limit`: a positive integer, at most [`MAX_LIMIT`].
pub fn limit_of(q: &HashMap<String, String>) -> ApiResult<Option<usize>> {
    match q.get("limit") {
        None => Ok(None),
        Some(l) => match l.parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n.min(MAX_LIMIT))),
            _ => Err(ApiError::bad_request("Invalid input for field 'limit': must be a positive integer.")),
        },
    }
}

/// The items after `marker`, at most `limit` of them, and the marker of the next page when
/// more remain.
pub fn slice(mut items: Vec<Value>, q: &HashMap<String, String>) -> ApiResult<(Vec<Value>, Option<String>)> {
    let limit = limit_of(q)?;
    if let Some(marker) = q.get("marker") {
        let at = items
            .iter()
            .position(|v| v.get("id").and_then(Value::as_str) == Some(marker.as_str()))
            .ok_or_else(|| ApiError::bad_request(format!("Marker {marker} could not be found.")))?;
        items.drain(..=at);
    }
    let Some(limit) = limit else { return Ok((items, None)) };
    if items.len() <= limit {
        return Ok((items, None));
    }
    items.truncate(limit);
    let next = items.last().and_then(|v| v.get("id")).and_then(Value::as_str).map(str::to_string);
    Ok((items, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!({"id": format!("id{i}")})).collect()
    }

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn pages_follow_markers_to_the_end() {
        let mut seen = Vec::new();
        let mut query = q(&[("limit", "2"), ("name", "a b")]);
        loop {
            let body = page("things", ids(5), "http://x", "/v3/things", &query).unwrap();
            seen.extend(body["things"].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap().to_string()));
            match body["links"]["next"].as_str() {
                Some(next) => {
                    assert!(next.starts_with("http://x/v3/things?limit=2&name=a%20b&marker="), "{next}");
                    let marker = next.rsplit("marker=").next().unwrap().to_string();
                    query.insert("marker".into(), marker);
                }
                None => break,
            }
        }
        assert_eq!(seen, ["id0", "id1", "id2", "id3", "id4"]);
    }

    #[test]
    fn bad_limits_and_unknown_markers_are_400() {
        for l in ["0", "-1", "x"] {
            assert_eq!(slice(ids(3), &q(&[("limit", l)])).unwrap_err().status.as_u16(), 400);
        }
        assert_eq!(slice(ids(3), &q(&[("marker", "nope")])).unwrap_err().status.as_u16(), 400);
        let (rest, next) = slice(ids(3), &q(&[("marker", "id0")])).unwrap();
        assert_eq!((rest.len(), next), (2, None));
    }
}
