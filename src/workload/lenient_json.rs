//! A lenient JSON reader for rt-app files, which often carry C comments,
//! trailing commas and duplicate keys: objects keep every key in file order,
//! and each value remembers its line for error messages.

#[derive(Clone, Debug, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Node>),
    Obj(Vec<(String, Node)>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub v: J,
    pub line: usize,
}

impl Node {
    pub fn kind(&self) -> &'static str {
        match self.v {
            J::Null => "null",
            J::Bool(_) => "a boolean",
            J::Num(_) => "a number",
            J::Str(_) => "a string",
            J::Arr(_) => "a list",
            J::Obj(_) => "an object",
        }
    }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    line: usize,
    /// Lists and objects open around the current value.
    depth: usize,
}

/// The deepest nesting accepted: rt-app files nest about five levels; the
/// limit keeps the recursive reader's stack bounded.
pub const MAX_DEPTH: usize = 64;

/// Parse `text`; errors are `line: message`.
pub fn parse(text: &str) -> Result<Node, (usize, String)> {
    let mut p = P {
        // Editors on Windows start UTF-8 files with a byte order mark.
        s: text.strip_prefix('\u{feff}').unwrap_or(text).as_bytes(),
        i: 0,
        line: 1,
        depth: 0,
    };
    let v = p.value()?;
    p.ws()?;
    if p.i < p.s.len() {
        return Err((p.line, "unexpected text after the top-level value".into()));
    }
    Ok(v)
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// Skip whitespace and `//` / `/* */` comments.
    fn ws(&mut self) -> Result<(), (usize, String)> {
        loop {
            match (self.peek(), self.s.get(self.i + 1).copied()) {
                (Some(c), _) if c.is_ascii_whitespace() => {
                    self.bump();
                }
                (Some(b'/'), Some(b'/')) => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.bump();
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let start = self.line;
                    self.i += 2;
                    loop {
                        match self.bump() {
                            None => return Err((start, "unterminated /* comment".into())),
                            Some(b'*') if self.peek() == Some(b'/') => {
                                self.bump();
                                break;
                            }
                            _ => {}
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self) -> Result<Node, (usize, String)> {
        self.ws()?;
        let line = self.line;
        if matches!(self.peek(), Some(b'{' | b'[')) {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err((line, format!("nested deeper than {MAX_DEPTH} levels")));
            }
        }
        let v = match self.peek() {
            None => return Err((line, "unexpected end of file".into())),
            Some(b'{') => self.object()?,
            Some(b'[') => self.array()?,
            Some(b'"') => J::Str(self.string()?),
            Some(_) => self.word()?,
        };
        if matches!(v, J::Obj(_) | J::Arr(_)) {
            self.depth -= 1;
        }
        Ok(Node { v, line })
    }

    fn object(&mut self) -> Result<J, (usize, String)> {
        self.bump();
        let mut items = Vec::new();
        loop {
            self.ws()?;
            match self.peek() {
                Some(b'}') => {
                    self.bump();
                    return Ok(J::Obj(items));
                }
                Some(b'"') => {}
                _ => return Err((self.line, "expected a \"key\" or `}`".into())),
            }
            let k = self.string()?;
            self.ws()?;
            if self.bump() != Some(b':') {
                return Err((self.line, format!("expected `:` after \"{k}\"")));
            }
            items.push((k, self.value()?));
            self.ws()?;
            match self.peek() {
                Some(b',') => {
                    self.bump();
                }
                Some(b'}') => {}
                _ => return Err((self.line, "expected `,` or `}`".into())),
            }
        }
    }

    fn array(&mut self) -> Result<J, (usize, String)> {
        self.bump();
        let mut items = Vec::new();
        loop {
            self.ws()?;
            if self.peek() == Some(b']') {
                self.bump();
                return Ok(J::Arr(items));
            }
            items.push(self.value()?);
            self.ws()?;
            match self.peek() {
                Some(b',') => {
                    self.bump();
                }
                Some(b']') => {}
                _ => return Err((self.line, "expected `,` or `]`".into())),
            }
        }
    }

    fn string(&mut self) -> Result<String, (usize, String)> {
        let line = self.line;
        self.bump();
        let mut out = Vec::new();
        loop {
            match self.bump() {
                None => return Err((line, "unterminated string".into())),
                Some(b'"') => break,
                Some(b'\\') => match self.bump() {
                    Some(b'n') => out.push(b'\n'),
                    Some(b't') => out.push(b'\t'),
                    Some(c) => out.push(c),
                    None => return Err((line, "unterminated string".into())),
                },
                Some(c) => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| (line, "string is not UTF-8".into()))
    }

    fn word(&mut self) -> Result<J, (usize, String)> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
        {
            self.bump();
        }
        let w = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        match w {
            "true" => Ok(J::Bool(true)),
            "false" => Ok(J::Bool(false)),
            "null" => Ok(J::Null),
            _ => w.parse().map(J::Num).map_err(|_| {
                let shown = if w.is_empty() {
                    (self.peek().unwrap_or(b'?') as char).to_string()
                } else {
                    w.to_string()
                };
                (self.line, format!("unexpected `{shown}`"))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_trailing_commas_and_duplicate_keys() {
        let t = "{ // c\n \"a\": 1, /* x\n y */ \"a\": [true, \"s\",],\n}";
        let n = parse(t).unwrap();
        let J::Obj(items) = n.v else { panic!() };
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].1.v, J::Num(1.0));
        assert_eq!(items[1].1.line, 3);
        assert_eq!(parse("{\"a\": }").unwrap_err().0, 1);
        assert_eq!(parse("{\n\"a\": 1\n\"b\": 2}").unwrap_err().0, 3);
    }

    #[test]
    fn nesting_is_bounded() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let deep = "[".repeat(33_126);
        let e = parse(&deep).unwrap_err();
        assert!(e.1.contains("nested deeper"), "{e:?}");
    }
}
