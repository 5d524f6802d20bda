//! OpenMetrics text (what `/metrics` serves) to an OTLP metrics export request in the OTLP/JSON
//! encoding (the protobuf messages' JSON mapping: lowerCamelCase fields, 64-bit integers as
//! strings, enums as numbers): gauges become OTLP gauges, counters cumulative monotonic sums,
//! histograms cumulative explicit-bucket histograms (OpenMetrics buckets count cumulatively,
//! OTLP buckets each on their own); other families (info, unknown) and points whose value
//! JSON cannot carry (NaN, infinities) are left out.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// `AGGREGATION_TEMPORALITY_CUMULATIVE`.
const CUMULATIVE: u8 = 2;

type Labels = Vec<(String, String)>;

/// One sample line: name, labels, value.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: Labels,
    value: f64,
}

#[derive(Debug, Default)]
struct Family {
    kind: String,
    help: String,
    samples: Vec<Sample>,
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        t => t.parse().ok(),
    }
}

/// `name{a="x",b="y\"z"} value [timestamp]`.
fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        let mut key = String::new();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '}' => break i,
                ',' | ' ' => {}
                '=' => {
                    if chars.next()?.1 != '"' {
                        return None;
                    }
                    let mut value = String::new();
                    loop {
                        match chars.next()?.1 {
                            '"' => break,
                            '\\' => match chars.next()?.1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            other => value.push(other),
                        }
                    }
                    labels.push((std::mem::take(&mut key), value));
                }
                other => key.push(other),
            }
        };
        rest = &body[end + 1..];
    }
    let value = parse_value(rest.split_whitespace().next()?)?;
    Some(Sample { name, labels, value })
}

fn families(text: &str) -> Vec<(String, Family)> {
    let mut out: Vec<(String, Family)> = Vec::new();
    for line in text.lines() {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (word, name, rest) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
            let Some(name) = name else { continue };
            if out.last().is_none_or(|(n, _)| n != name) {
                out.push((name.to_string(), Family::default()));
            }
            if let Some((_, f)) = out.last_mut() {
                match word {
                    Some("TYPE") => f.kind = rest.to_string(),
                    Some("HELP") => f.help = rest.to_string(),
                    _ => {}
                }
            }
        } else if let (Some(sample), Some((_, f))) = (parse_sample(line), out.last_mut()) {
            f.samples.push(sample);
        }
    }
    out
}

fn attributes(labels: &[(String, String)]) -> Value {
    Value::Array(labels.iter().map(|(k, v)| string_kv(k, v)).collect())
}

fn string_kv(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

fn number(labels: &[(String, String)], value: f64, start: u64, now: u64) -> Option<Value> {
    value.is_finite().then(|| {
        json!({
            "attributes": attributes(labels),
            "startTimeUnixNano": start.to_string(),
            "timeUnixNano": now.to_string(),
            "asDouble": value,
        })
    })
}

/// The histogram points of a family: one per label set (without `le`).
fn histogram_points(name: &str, samples: &[Sample], start: u64, now: u64) -> Vec<Value> {
    #[derive(Default)]
    struct Acc {
        buckets: Vec<(f64, f64)>,
        sum: Option<f64>,
        count: f64,
    }
    let mut by_labels: BTreeMap<Labels, Acc> = BTreeMap::new();
    for s in samples {
        let mut labels = s.labels.clone();
        let le = labels.iter().position(|(k, _)| k == "le").map(|i| labels.remove(i).1);
        let acc = by_labels.entry(labels).or_default();
        match s.name.strip_prefix(name) {
            Some("_bucket") => {
                if let Some(bound) = le.as_deref().and_then(parse_value) {
                    acc.buckets.push((bound, s.value));
                }
            }
            Some("_sum") => acc.sum = Some(s.value),
            Some("_count") => acc.count = s.value,
            _ => {}
        }
    }
    by_labels
        .into_iter()
        .map(|(labels, mut acc)| {
            acc.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            let finite: Vec<(f64, f64)> = acc.buckets.iter().copied().filter(|(b, _)| b.is_finite()).collect();
            let mut counts = Vec::with_capacity(finite.len() + 1);
            let mut below = 0.0;
            for (_, cumulative) in &finite {
                counts.push(((cumulative - below).max(0.0) as u64).to_string());
                below = *cumulative;
            }
            counts.push(((acc.count - below).max(0.0) as u64).to_string());
            let mut point = json!({
                "attributes": attributes(&labels),
                "startTimeUnixNano": start.to_string(),
                "timeUnixNano": now.to_string(),
                "count": (acc.count as u64).to_string(),
                "bucketCounts": counts,
                "explicitBounds": finite.iter().map(|(b, _)| *b).collect::<Vec<f64>>(),
            });
            if let Some(sum) = acc.sum.filter(|s| s.is_finite()) {
                point["sum"] = json!(sum);
            }
            point
        })
        .collect()
}

/// The export request for `text`, as node `node_id` of the idnode service; `start` is when
/// the cumulative series began (the process start), `now` the collection time (unix ns).
pub fn request(text: &str, node_id: u64, start: u64, now: u64) -> Value {
    let mut metrics = Vec::new();
    for (name, f) in families(text) {
        let points = |from: u64| -> Vec<Value> {
            f.samples
                .iter()
                .filter(|s| f.kind != "counter" || s.name == format!("{name}_total") || s.name == name)
                .filter_map(|s| number(&s.labels, s.value, from, now))
                .collect()
        };
        let data = match f.kind.as_str() {
            "gauge" => json!({"gauge": {"dataPoints": points(0)}}),
            "counter" => json!({"sum": {"dataPoints": points(start), "aggregationTemporality": CUMULATIVE,
                "isMonotonic": true}}),
            "histogram" => json!({"histogram": {"dataPoints": histogram_points(&name, &f.samples, start, now),
                "aggregationTemporality": CUMULATIVE}}),
            _ => continue,
        };
        let mut metric = json!({"name": name, "description": f.help});
        if let (Some(m), Value::Object(d)) = (metric.as_object_mut(), data) {
            m.extend(d);
        }
        metrics.push(metric);
    }
    let version = env!("CARGO_PKG_VERSION");
    json!({"resourceMetrics": [{
        "resource": {"attributes": [
            string_kv("service.name", "idnode"),
            string_kv("service.version", version),
            string_kv("service.instance.id", &node_id.to_string()),
        ]},
        "scopeMetrics": [{"scope": {"name": "idnode", "version": version}, "metrics": metrics}],
    }]})
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP up 1 when up.\n# TYPE up gauge\nup{node=\"a \\\"b\\\"\"} 1\n\
        # HELP reqs Requests.\n# TYPE reqs counter\nreqs_total{code=\"200\"} 7\nreqs_total{code=\"500\"} 2\n\
        # HELP lat Latency.\n# TYPE lat histogram\nlat_sum 1.5\nlat_count 4\nlat_bucket{le=\"0.1\"} 1\n\
        lat_bucket{le=\"1.0\"} 3\nlat_bucket{le=\"+Inf\"} 4\n# TYPE build info\nbuild_info{v=\"1\"} 1\n# EOF\n";

    fn metric<'a>(req: &'a Value, name: &str) -> &'a Value {
        let metrics = req["resourceMetrics"][0]["scopeMetrics"][0]["metrics"].as_array().unwrap();
        metrics.iter().find(|m| m["name"] == name).expect(name)
    }

    #[test]
    fn families_translate_to_otlp_kinds() {
        let req = request(TEXT, 3, 10, 20);
        let names: Vec<&str> = req["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["up", "reqs", "lat"], "info families are left out");
        let g = &metric(&req, "up")["gauge"]["dataPoints"][0];
        assert_eq!(g["attributes"], json!([{"key": "node", "value": {"stringValue": "a \"b\""}}]));
        assert_eq!((g["asDouble"].as_f64(), g["timeUnixNano"].as_str()), (Some(1.0), Some("20")));
        let s = &metric(&req, "reqs")["sum"];
        assert_eq!((s["isMonotonic"].as_bool(), s["aggregationTemporality"].as_u64()), (Some(true), Some(2)));
        assert_eq!(s["dataPoints"].as_array().unwrap().len(), 2);
        assert_eq!(s["dataPoints"][0]["startTimeUnixNano"], "10");
        let p = &metric(&req, "lat")["histogram"]["dataPoints"][0];
        assert_eq!((p["count"].as_str(), p["sum"].as_f64()), (Some("4"), Some(1.5)));
        assert_eq!(p["explicitBounds"], json!([0.1, 1.0]));
        assert_eq!(p["bucketCounts"], json!(["1", "2", "1"]), "per-bucket counts, the last above every bound");
        let attrs = req["resourceMetrics"][0]["resource"]["attributes"].as_array().unwrap();
        assert!(attrs.contains(&string_kv("service.instance.id", "3")));
    }

    #[test]
    fn malformed_lines_and_values_json_cannot_carry_are_skipped() {
        let req = request("# TYPE g gauge\ng{a=\"x} 1\ng nope\ng NaN\ng 2\n", 1, 0, 0);
        assert_eq!(metric(&req, "g")["gauge"]["dataPoints"].as_array().unwrap().len(), 1);
    }
}
