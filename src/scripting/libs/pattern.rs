//! Lua 5.1's pattern matcher, in Rust so that a long match can be stopped:
//! 5.1's C matcher backtracks without bound (`string.rep('a*', 40) .. 'b'`
//! against forty `a`s runs for ages) where the instruction hook never
//! fires. This one asks now and then whether SCRIPT KILL wants the script
//! stopped. Semantics are 5.1's, including the pattern ending at its first
//! NUL byte (5.1 reads it as a C string), and it borrows everything it
//! reads, so it owns nothing a Lua error could skip.

/// `LUA_MAXCAPTURES`.
pub const MAX_CAPTURES: usize = 32;

/// Matcher steps between kill checks.
const CHECK_EVERY: u32 = 10_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CaptureLen {
    Unfinished,
    Position,
    Len(usize),
}

#[derive(Clone, Copy, Debug)]
pub struct Capture {
    pub start: usize,
    pub len: CaptureLen,
}

/// Why a match stopped with an error: the message 5.1 raises, or a kill.
#[derive(Debug, PartialEq)]
pub enum MatchError {
    Message(&'static std::ffi::CStr),
    Killed,
}

type Step = Result<Option<usize>, MatchError>;

pub struct Matcher<'a> {
    pub src: &'a [u8],
    pat: &'a [u8],
    pub level: usize,
    pub captures: [Capture; MAX_CAPTURES],
    steps: u32,
    killed: fn() -> bool,
}

fn fail<T>(message: &'static std::ffi::CStr) -> Result<T, MatchError> {
    Err(MatchError::Message(message))
}

/// The pattern as 5.1 sees it: up to its first NUL byte.
pub fn c_pattern(pat: &[u8]) -> &[u8] {
    pat.iter().position(|&c| c == 0).map_or(pat, |n| &pat[..n])
}

impl<'a> Matcher<'a> {
    /// `pat` must already be cut at its first NUL (`c_pattern`).
    pub fn new(src: &'a [u8], pat: &'a [u8], killed: fn() -> bool) -> Self {
        Matcher {
            src,
            pat,
            level: 0,
            captures: [Capture {
                start: 0,
                len: CaptureLen::Unfinished,
            }; MAX_CAPTURES],
            steps: 0,
            killed,
        }
    }

    /// Tries the pattern from `p` at subject position `s`; the end of the
    /// match if it matches there.
    pub fn try_at(&mut self, s: usize, p: usize) -> Step {
        self.level = 0;
        self.do_match(s, p)
    }

    fn pat_at(&self, p: usize) -> u8 {
        self.pat.get(p).copied().unwrap_or(0)
    }

    fn src_at(&self, s: usize) -> u8 {
        self.src.get(s).copied().unwrap_or(0)
    }

    fn tick(&mut self) -> Result<(), MatchError> {
        self.steps += 1;
        if self.steps >= CHECK_EVERY {
            self.steps = 0;
            if (self.killed)() {
                return Err(MatchError::Killed);
            }
        }
        Ok(())
    }

    fn class_end(&self, mut p: usize) -> Result<usize, MatchError> {
        let c = self.pat_at(p);
        p += 1;
        match c {
            b'%' => {
                if p >= self.pat.len() {
                    return fail(c"malformed pattern (ends with '%')");
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.pat_at(p) == b'^' {
                    p += 1;
                }
                loop {
                    if p >= self.pat.len() {
                        return fail(c"malformed pattern (missing ']')");
                    }
                    let c = self.pat[p];
                    p += 1;
                    if c == b'%' && p < self.pat.len() {
                        p += 1;
                    }
                    if self.pat_at(p) == b']' {
                        return Ok(p + 1);
                    }
                }
            }
            _ => Ok(p),
        }
    }

    /// `p` is the set's `[`, `ec` its closing `]`.
    fn match_bracket_class(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let mut sig = true;
        if self.pat_at(p + 1) == b'^' {
            sig = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= ec {
                return !sig;
            }
            if self.pat[p] == b'%' {
                p += 1;
                if match_class(c, self.pat_at(p)) {
                    return sig;
                }
            } else if self.pat_at(p + 1) == b'-' && p + 2 < ec {
                p += 2;
                if self.pat[p - 2] <= c && c <= self.pat[p] {
                    return sig;
                }
            } else if self.pat[p] == c {
                return sig;
            }
        }
    }

    fn single_match(&self, s: usize, p: usize, ep: usize) -> bool {
        if s >= self.src.len() {
            return false;
        }
        let c = self.src[s];
        match self.pat[p] {
            b'.' => true,
            b'%' => match_class(c, self.pat_at(p + 1)),
            b'[' => self.match_bracket_class(c, p, ep - 1),
            other => other == c,
        }
    }

    fn match_balance(&self, s: usize, p: usize) -> Step {
        if p + 1 >= self.pat.len() {
            return fail(c"unbalanced pattern");
        }
        if s >= self.src.len() || self.src[s] != self.pat[p] {
            return Ok(None);
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        let mut depth = 1;
        for (i, &c) in self.src.iter().enumerate().skip(s + 1) {
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
        }
        Ok(None)
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Step {
        let mut i = 0;
        while self.single_match(s + i, p, ep) {
            i += 1;
        }
        loop {
            self.tick()?;
            if let Some(end) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(end));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Step {
        loop {
            self.tick()?;
            if let Some(end) = self.do_match(s, ep + 1)? {
                return Ok(Some(end));
            }
            if self.single_match(s, p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, len: CaptureLen) -> Step {
        if self.level >= MAX_CAPTURES {
            return fail(c"too many captures");
        }
        self.captures[self.level] = Capture { start: s, len };
        self.level += 1;
        let res = self.do_match(s, p)?;
        if res.is_none() {
            self.level -= 1;
        }
        Ok(res)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Step {
        let Some(l) = (0..self.level)
            .rev()
            .find(|&l| self.captures[l].len == CaptureLen::Unfinished)
        else {
            return fail(c"invalid pattern capture");
        };
        self.captures[l].len = CaptureLen::Len(s - self.captures[l].start);
        let res = self.do_match(s, p)?;
        if res.is_none() {
            self.captures[l].len = CaptureLen::Unfinished;
        }
        Ok(res)
    }

    /// `%1`..`%9` in a pattern: the text of a closed capture again.
    fn match_capture(&self, s: usize, digit: u8) -> Step {
        let l = digit.wrapping_sub(b'1') as usize;
        let len = match self.captures.get(l).filter(|_| l < self.level) {
            Some(Capture {
                len: CaptureLen::Len(len),
                ..
            }) => *len,
            // A position capture compares as 5.1 does: its length is -2,
            // which as a size never fits.
            Some(Capture {
                len: CaptureLen::Position,
                ..
            }) => return Ok(None),
            _ => return fail(c"invalid capture index"),
        };
        let start = self.captures[l].start;
        let subject = &self.src[s..];
        if subject.len() >= len && subject[..len] == self.src[start..start + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }

    fn do_match(&mut self, mut s: usize, mut p: usize) -> Step {
        loop {
            self.tick()?;
            if p >= self.pat.len() {
                return Ok(Some(s));
            }
            match self.pat[p] {
                b'(' => {
                    return if self.pat_at(p + 1) == b')' {
                        self.start_capture(s, p + 2, CaptureLen::Position)
                    } else {
                        self.start_capture(s, p + 1, CaptureLen::Unfinished)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'%' if self.pat_at(p + 1) == b'b' => match self.match_balance(s, p + 2)? {
                    Some(end) => {
                        s = end;
                        p += 4;
                        continue;
                    }
                    None => return Ok(None),
                },
                b'%' if self.pat_at(p + 1) == b'f' => {
                    p += 2;
                    if self.pat_at(p) != b'[' {
                        return fail(c"missing '[' after '%f' in pattern");
                    }
                    let ep = self.class_end(p)?;
                    let previous = if s == 0 { 0 } else { self.src[s - 1] };
                    if self.match_bracket_class(previous, p, ep - 1)
                        || !self.match_bracket_class(self.src_at(s), p, ep - 1)
                    {
                        return Ok(None);
                    }
                    p = ep;
                    continue;
                }
                b'%' if self.pat_at(p + 1).is_ascii_digit() => {
                    match self.match_capture(s, self.pat[p + 1])? {
                        Some(end) => {
                            s = end;
                            p += 2;
                            continue;
                        }
                        None => return Ok(None),
                    }
                }
                b'$' if p + 1 == self.pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                _ => {}
            }
            let ep = self.class_end(p)?;
            let m = self.single_match(s, p, ep);
            match self.pat_at(ep) {
                b'?' => {
                    if m && let Some(end) = self.do_match(s + 1, ep + 1)? {
                        return Ok(Some(end));
                    }
                    p = ep + 1;
                }
                b'*' => return self.max_expand(s, p, ep),
                b'+' => {
                    return if m {
                        self.max_expand(s + 1, p, ep)
                    } else {
                        Ok(None)
                    };
                }
                b'-' => return self.min_expand(s, p, ep),
                _ => {
                    if !m {
                        return Ok(None);
                    }
                    s += 1;
                    p = ep;
                }
            }
        }
    }
}

/// `%a`, `%d`... with C's `ctype` in the "C" locale; any other byte
/// after `%` stands for itself.
fn match_class(c: u8, class: u8) -> bool {
    let res = match class.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return class == c,
    };
    if class.is_ascii_lowercase() {
        res
    } else {
        !res
    }
}

#[cfg(test)]
mod tests {
    use super::{MatchError, Matcher, c_pattern};

    /// A match that would backtrack for ages stops at the first kill check.
    #[test]
    fn a_kill_stops_a_backtracking_match() {
        let src = [b'a'; 40];
        let pat = [b"a*".repeat(40), b"b".to_vec()].concat();
        let mut m = Matcher::new(&src, c_pattern(&pat), || true);
        assert_eq!(m.try_at(0, 0), Err(MatchError::Killed));
    }
}
