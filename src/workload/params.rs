//! Workload parameters: `name:key=value,key=value` specs and scenario
//! tables, with typed getters that reject unknown keys and bad values.

use super::program::Dist;
use std::collections::BTreeMap;

/// The parameters of one workload, in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    pub kind: String,
    pub values: BTreeMap<String, String>,
}

/// Parse a duration: `8ms`, `100us`, `1.5s`, `250ns`, or plain ns.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult = match unit.trim() {
        // A bare 0 is 0 in any unit; any other bare number is ambiguous
        // (`--duration 1` once meant 1 ns).
        "" if num.parse::<f64>() == Ok(0.0) => 1.0,
        "" => {
            return Err(format!(
                "`{s}` has no time unit (use ns, us, ms or s, e.g. {s}s)"
            ))
        }
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => {
            return Err(format!(
                "unknown time unit `{u}` in `{s}` (use ns, us, ms or s)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 8ms, 100us, 2s)"))?;
    let ns = (v * mult).round();
    if ns >= u64::MAX as f64 {
        return Err(format!("`{s}` is too long (the limit is about 584 years)"));
    }
    Ok(ns as u64)
}

/// Parse a distribution: `8ms` (fixed), `1ms..3ms` (uniform) or `exp:2ms`.
pub fn parse_dist(s: &str) -> Result<Dist, String> {
    if let Some(mean) = s.strip_prefix("exp:") {
        return Ok(Dist::Exp(parse_duration(mean)?));
    }
    if let Some((lo, hi)) = s.split_once("..") {
        let (lo, hi) = (parse_duration(lo)?, parse_duration(hi)?);
        if lo > hi {
            return Err(format!("empty range `{s}`"));
        }
        return Ok(Dist::Uniform(lo, hi));
    }
    Ok(Dist::Fixed(parse_duration(s)?))
}

impl Params {
    /// Parse `kind[:k=v,k=v...]`.
    pub fn parse_spec(spec: &str) -> Result<Params, String> {
        let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut values = BTreeMap::new();
        // `rtapp:FILE` names the file directly.
        if kind == "rtapp" && !rest.contains('=') && !rest.is_empty() {
            values.insert("file".to_string(), rest.to_string());
            return Ok(Params {
                kind: kind.to_string(),
                values,
            });
        }
        for kv in rest.split(',').filter(|s| !s.trim().is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("`{kv}` in workload `{spec}` is not key=value"))?;
            values.insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(Params {
            kind: kind.trim().to_string(),
            values,
        })
    }

    /// Reject keys that are not in `known`.
    pub fn check_keys(&self, known: &[&str]) -> Result<(), String> {
        for k in self.values.keys() {
            if !known.contains(&k.as_str()) {
                return Err(format!(
                    "unknown parameter `{k}` for workload `{}`{} (known: {})",
                    self.kind,
                    crate::util::suggest::did_you_mean(k, known.iter().copied()),
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    pub fn bad(&self, key: &str, what: &str) -> String {
        format!(
            "workload `{}`: parameter `{key}` = `{}` {what}",
            self.kind,
            self.get(key).unwrap_or("")
        )
    }

    /// A positive integer in 1..=max.
    pub fn count_max(&self, key: &str, default: u64, max: u64) -> Result<u64, String> {
        let n = self.count(key, default)?;
        if n > max {
            return Err(self.bad(key, &format!("is above the limit of {max}")));
        }
        Ok(n)
    }

    /// A positive integer (≥ 1).
    pub fn count(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(self.bad(key, "must be a whole number ≥ 1")),
            },
        }
    }

    pub fn int(&self, key: &str, default: i64, lo: i64, hi: i64) -> Result<i64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.parse::<i64>() {
                Ok(n) if (lo..=hi).contains(&n) => Ok(n),
                _ => Err(self.bad(key, &format!("must be an integer in {lo}..={hi}"))),
            },
        }
    }

    pub fn flag(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(default),
            Some("true" | "1" | "yes") => Ok(true),
            Some("false" | "0" | "no") => Ok(false),
            Some(_) => Err(self.bad(key, "must be true or false")),
        }
    }

    pub fn choice<'a>(&self, key: &str, options: &[&'a str]) -> Result<&'a str, String> {
        match self.get(key) {
            None => Ok(options[0]),
            Some(v) => options
                .iter()
                .find(|o| **o == v)
                .copied()
                .ok_or_else(|| self.bad(key, &format!("must be one of {}", options.join("|")))),
        }
    }

    /// A duration, 0 allowed.
    pub fn duration(&self, key: &str, default: &str) -> Result<u64, String> {
        parse_duration(self.get(key).unwrap_or(default))
            .map_err(|e| format!("workload `{}`: parameter `{key}`: {e}", self.kind))
    }

    /// A positive duration distribution.
    pub fn dist(&self, key: &str, default: &str) -> Result<Dist, String> {
        let v = self.get(key).unwrap_or(default);
        let d = parse_dist(v)
            .map_err(|e| format!("workload `{}`: parameter `{key}`: {e}", self.kind))?;
        let positive = match d {
            Dist::Fixed(x) | Dist::Exp(x) | Dist::LogNormal { median: x, .. } => x > 0,
            Dist::Uniform(_, hi) => hi > 0,
        };
        if !positive {
            return Err(self.bad(key, "must be a positive duration"));
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_durations_parse() {
        let p = Params::parse_spec("hackbench:groups=2, loops=10").unwrap();
        assert_eq!(p.kind, "hackbench");
        assert_eq!(p.count("groups", 10).unwrap(), 2);
        assert_eq!(p.count("fds", 20).unwrap(), 20);
        assert!(p.check_keys(&["groups"]).is_err());
        assert_eq!(parse_duration("8ms").unwrap(), 8_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration("250ns").unwrap(), 250);
        assert_eq!(parse_duration("0").unwrap(), 0);
        let e = parse_duration("1").unwrap_err();
        assert!(e.contains("no time unit") && e.contains("ms"), "{e}");
        assert!(parse_duration("3 parsecs").is_err());
        assert_eq!(
            parse_dist("1ms..2ms").unwrap(),
            Dist::Uniform(1_000_000, 2_000_000)
        );
        assert_eq!(parse_dist("exp:1us").unwrap(), Dist::Exp(1000));
        let z = Params::parse_spec("periodic:run=0ms").unwrap();
        assert!(z.dist("run", "1ms").is_err());
        let neg = Params::parse_spec("pipe:loops=-5").unwrap();
        assert!(neg.count("loops", 1).is_err());
    }
}
