//! The function libraries (FUNCTION LOAD): each library's code and what it
//! registered. Lua states load a library's code themselves the first time
//! one of its functions runs on them, keyed by the library's load id.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::Registered;
use crate::error::{CmdError, CmdResult};
use crate::persist::rdb;

pub struct Library {
    pub name: String,
    pub code: Bytes,
    /// Different for every load, so that a state that loaded an older
    /// version of the library loads it again.
    pub id: u64,
    /// By name.
    pub functions: Vec<Registered>,
}

/// Every loaded library. Function names are one namespace across
/// libraries, matched without regard to case, as in Redis.
#[derive(Default)]
pub struct Libraries {
    by_name: BTreeMap<String, Arc<Library>>,
    by_function: HashMap<String, Arc<Library>>,
    next_id: AtomicU64,
}

/// Why libraries could not be added: a name already taken.
pub enum Collision {
    Library(String),
    Function(String),
}

/// What RESTORE does with the libraries already there.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Flush,
    Append,
    Replace,
}

impl Libraries {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The library holding function `name`, and that function's flags.
    pub fn find(&self, name: &str) -> Option<Arc<Library>> {
        self.by_function.get(&name.to_ascii_lowercase()).cloned()
    }

    pub fn libraries(&self) -> impl Iterator<Item = &Arc<Library>> {
        self.by_name.values()
    }

    /// (libraries, functions), for FUNCTION STATS.
    pub fn counts(&self) -> (usize, usize) {
        (self.by_name.len(), self.by_function.len())
    }

    pub fn clear(&mut self) {
        self.by_name.clear();
        self.by_function.clear();
    }

    pub fn delete(&mut self, name: &str) -> CmdResult<()> {
        let library = self
            .by_name
            .remove(name)
            .ok_or_else(|| CmdError::other("ERR Library not found"))?;
        self.unlink(&library);
        Ok(())
    }

    fn unlink(&mut self, library: &Library) {
        for f in &library.functions {
            self.by_function.remove(&f.name.to_ascii_lowercase());
        }
    }

    /// Adds libraries, all or none: a library that exists already is an
    /// error unless `replace`, and so is a function name another library
    /// (not being replaced) has.
    pub fn add(&mut self, libraries: Vec<Library>, replace: bool) -> Result<(), Collision> {
        for library in &libraries {
            if !replace && self.by_name.contains_key(&library.name) {
                return Err(Collision::Library(library.name.clone()));
            }
        }
        let replaced = |owner: &Library| libraries.iter().any(|l| l.name == owner.name);
        for library in &libraries {
            for f in &library.functions {
                if let Some(owner) = self.by_function.get(&f.name.to_ascii_lowercase())
                    && !replaced(owner)
                {
                    return Err(Collision::Function(f.name.clone()));
                }
            }
        }
        for library in libraries {
            if let Some(old) = self.by_name.remove(&library.name) {
                self.unlink(&old);
            }
            let library = Arc::new(library);
            for f in &library.functions {
                self.by_function
                    .insert(f.name.to_ascii_lowercase(), library.clone());
            }
            self.by_name.insert(library.name.clone(), library);
        }
        Ok(())
    }
}

/// FUNCTION DUMP's payload, as Redis 7.0 writes it: each library's code
/// after RDB's function opcode, then the RDB version and CRC-64 that close
/// a DUMP payload.
pub fn dump<'l>(libraries: impl Iterator<Item = &'l Arc<Library>>) -> Vec<u8> {
    let mut enc = rdb::Encoder::new(true);
    for library in libraries {
        enc.byte(rdb::opcode::FUNCTION_2);
        enc.string(&library.code);
    }
    rdb::seal_payload(enc.out)
}

/// The libraries' code in a FUNCTION DUMP payload, with Redis's errors;
/// the release candidates' form (name, engine and code apart) is joined
/// into the code's shebang as Redis 7.0 joins it.
pub fn undump(payload: &[u8]) -> CmdResult<Vec<Bytes>> {
    let body = rdb::open_payload(payload)
        .ok_or_else(|| CmdError::other("ERR DUMP payload version or checksum are wrong"))?;
    let mut dec = rdb::Decoder::new(body);
    let mut codes = Vec::new();
    while !dec.is_empty() {
        let kind = dec
            .byte()
            .map_err(|_| load_error("can not read data type"))?;
        let code = match kind {
            rdb::opcode::FUNCTION_2 => field(&mut dec, "Failed loading library payload")?,
            rdb::opcode::FUNCTION_PRE_GA => {
                let name = field(&mut dec, "Failed loading library name")?;
                let engine = field(&mut dec, "Failed loading engine name")?;
                let has_description = dec
                    .len()
                    .map_err(|_| load_error("Failed loading library description indicator"))?;
                if has_description != 0 {
                    field(&mut dec, "Failed loading library description")?;
                }
                let blob = field(&mut dec, "Failed loading library blob")?;
                let mut code = b"#!".to_vec();
                code.extend_from_slice(&engine);
                code.extend_from_slice(b" name=");
                code.extend_from_slice(&name);
                code.push(b'\n');
                code.extend_from_slice(&blob);
                code
            }
            _ => return Err(load_error("given type is not a function")),
        };
        codes.push(Bytes::from(code));
    }
    Ok(codes)
}

/// One string of a library's record, or Redis's error naming it.
fn field(dec: &mut rdb::Decoder<'_>, what: &str) -> CmdResult<Vec<u8>> {
    dec.string()
        .map(|s| s.into_owned())
        .map_err(|_| load_error(what))
}

fn load_error(what: &str) -> CmdError {
    CmdError::other(format!("ERR {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library(name: &str, code: &str) -> Arc<Library> {
        Arc::new(Library {
            name: name.into(),
            code: Bytes::copy_from_slice(code.as_bytes()),
            id: 0,
            functions: Vec::new(),
        })
    }

    #[test]
    fn dump_round_trips_and_refuses_damage() {
        let libs = [
            library("a", "#!lua name=a\nx"),
            library("b", "#!lua name=b\ny"),
        ];
        let payload = dump(libs.iter());
        let codes = undump(&payload).unwrap();
        assert_eq!(codes, [libs[0].code.clone(), libs[1].code.clone()]);
        for cut in 0..payload.len() {
            assert!(undump(&payload[..cut]).is_err());
        }
        let mut damaged = payload.clone();
        damaged[20] ^= 1;
        assert!(undump(&damaged).is_err());
        // Redis 7.0.15's FUNCTION DUMP after a FUNCTION LOAD of this code.
        let code = "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 1 end)";
        let redis: &[u8] = b"\xf5@U#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return 1 end)\n\x00(\xe9\x9as.\xda\x0b\xf3";
        assert_eq!(dump([library("mylib", code)].iter()), redis);
        assert_eq!(undump(redis).unwrap(), [Bytes::from(code)]);
        // The release candidates' record: name, engine, no description,
        // code; joined into a shebang.
        let mut pre_ga = rdb::Encoder::new(false);
        pre_ga.byte(rdb::opcode::FUNCTION_PRE_GA);
        pre_ga.string(b"old");
        pre_ga.string(b"lua");
        pre_ga.len(0);
        pre_ga.string(b"return 1");
        assert_eq!(
            undump(&rdb::seal_payload(pre_ga.out)).unwrap(),
            [Bytes::from("#!lua name=old\nreturn 1")]
        );
        let mut not_a_function = vec![0u8, 1, b'x'];
        not_a_function = rdb::seal_payload(not_a_function);
        assert_eq!(
            undump(&not_a_function).unwrap_err(),
            CmdError::other("ERR given type is not a function")
        );
    }
}
