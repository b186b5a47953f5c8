//! Geo commands: GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH,
//! GEOSEARCHSTORE and the GEORADIUS family. A geo set is a sorted set whose
//! scores are 52-bit geohashes (`util::geohash`).

use bytes::Bytes;

use crate::command::Ctx;
use crate::command::presets::{OW_UPDATE, RO_ACCESS, RW_UPDATE, key1};
use crate::command::spec::acl::GEO;
use crate::command::spec::flag::{DENYOOM, READONLY, WRITE};
use crate::command::spec::{CommandSpec, Group, KeySpec};
use crate::error::{CmdError, CmdResult};
use crate::keyspace::{Db, SortedSet, Ttl, Value};
use crate::protocol::Reply;
use crate::pubsub::Event;
use crate::util::geohash::{self, LAT_MAX, LAT_MIN, LONG_MAX, LONG_MIN, Shape};
use crate::util::{parse_f64, parse_i64, strtod_range_error};

/// A float argument; `what` names it in the error (Redis's default text
/// when empty).
fn parse_float(arg: &[u8], what: &str) -> CmdResult<f64> {
    // A subnormal passes here: Redis refuses only ±HUGE_VAL and zero.
    let value = parse_f64(arg).filter(|v| v.is_subnormal() || !strtod_range_error(arg, *v));
    value.ok_or_else(|| match what {
        "" => CmdError::NotFloat,
        what => CmdError::other(format!("ERR need numeric {what}")),
    })
}

fn parse_point(lon: &[u8], lat: &[u8]) -> CmdResult<(f64, f64)> {
    let (lon, lat) = (parse_float(lon, "")?, parse_float(lat, "")?);
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return Err(CmdError::other(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// Meters per unit.
fn parse_unit(arg: &[u8]) -> CmdResult<f64> {
    match &arg.to_ascii_lowercase()[..] {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(CmdError::other(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

fn distance_reply(d: f64) -> Reply {
    Reply::bulk(format!("{d:.4}"))
}

fn point_of(zset: &SortedSet, member: &[u8]) -> Option<(f64, f64)> {
    zset.score(member).map(|s| geohash::decode_score(s as u64))
}

pub fn geoadd(ctx: &mut Ctx) -> CmdResult<Reply> {
    let mut at = 2;
    let (mut nx, mut xx) = (false, false);
    while at < ctx.args.len() {
        match &ctx.args[at].to_ascii_lowercase()[..] {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"ch" => {}
            _ => break,
        }
        at += 1;
    }
    if !(ctx.args.len() - at).is_multiple_of(3) || (nx && xx) {
        return Err(CmdError::Syntax);
    }
    // As in Redis, the points become a ZADD of their scores.
    let mut zadd: Vec<Bytes> = vec![Bytes::from_static(b"zadd")];
    zadd.extend_from_slice(&ctx.args[1..at]);
    for point in ctx.args[at..].chunks(3) {
        let (lon, lat) = parse_point(&point[0], &point[1])?;
        let score = geohash::encode_score(lon, lat).unwrap_or_default();
        zadd.push(crate::util::i64_bytes(score as i64));
        zadd.push(point[2].clone());
    }
    super::zadd(&mut Ctx {
        args: &zadd,
        shared: ctx.shared,
        client: ctx.client,
        locked: ctx.locked,
    })
}

pub fn geodist(ctx: &mut Ctx) -> CmdResult<Reply> {
    let to_meters = match ctx.args.len() {
        4 => 1.0,
        5 => parse_unit(ctx.arg(4))?,
        _ => return Err(CmdError::Syntax),
    };
    let key = ctx.arg(1).clone();
    let (a, b) = (ctx.arg(2).clone(), ctx.arg(3).clone());
    let mut db = ctx.db();
    let Some(zset) = db.typed::<SortedSet>(&key)? else {
        return Ok(Reply::Nil);
    };
    Ok(match (point_of(zset, &a), point_of(zset, &b)) {
        (Some(p), Some(q)) => distance_reply(geohash::distance(p.0, p.1, q.0, q.1) / to_meters),
        _ => Reply::Nil,
    })
}

/// One reply per member argument, from the member's score (`None` when
/// the key or the member is missing).
fn per_member(ctx: &mut Ctx, answer: fn(Option<u64>) -> Reply) -> CmdResult<Reply> {
    let key = ctx.arg(1).clone();
    let args = ctx.args;
    let mut db = ctx.db();
    let zset = db.typed::<SortedSet>(&key)?;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .map(|m| answer(zset.as_ref().and_then(|z| z.score(m)).map(|s| s as u64)))
            .collect(),
    ))
}

pub fn geohash(ctx: &mut Ctx) -> CmdResult<Reply> {
    per_member(ctx, |score| match score {
        Some(s) => Reply::bulk_from(&geohash::standard_geohash(s)),
        None => Reply::Nil,
    })
}

pub fn geopos(ctx: &mut Ctx) -> CmdResult<Reply> {
    per_member(ctx, |score| match score.map(geohash::decode_score) {
        Some((lon, lat)) => Reply::Array(vec![Reply::Coord(lon), Reply::Coord(lat)]),
        None => Reply::NilArray,
    })
}

/// Which command of the search family runs, and so which arguments it takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    /// GEORADIUS[_RO]: `key longitude latitude radius unit`.
    Radius { store: bool },
    /// GEORADIUSBYMEMBER[_RO]: `key member radius unit`.
    ByMember { store: bool },
    /// GEOSEARCH: `key` then FROM…/BY… options.
    Search,
    /// GEOSEARCHSTORE: `destination source` then options.
    SearchStore,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// One match: its member, score, distance (meters) and position.
struct Found {
    member: Bytes,
    score: u64,
    dist: f64,
    point: (f64, f64),
}

struct Search {
    center: Option<(f64, f64)>,
    shape: Option<Shape>,
    /// Meters per unit of the radius or box.
    unit: f64,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    any: bool,
    count: i64,
    order: Order,
    store: Option<Bytes>,
    store_dist: bool,
}

/// A radius and unit (`ERR need numeric radius`, no negatives).
fn parse_radius(radius: &[u8], unit: &[u8]) -> CmdResult<(f64, f64)> {
    let r = parse_float(radius, "radius")?;
    if r < 0.0 {
        return Err(CmdError::other("ERR radius cannot be negative"));
    }
    Ok((r, parse_unit(unit)?))
}

fn member_point(zset: Option<&SortedSet>, member: &[u8]) -> CmdResult<Option<(f64, f64)>> {
    match zset {
        None => Ok(None),
        Some(z) => point_of(z, member)
            .map(Some)
            .ok_or_else(|| CmdError::other("ERR could not decode requested zset member")),
    }
}

/// Parses the line in Redis's order: the fixed arguments, then options left
/// to right, each checked as it is read.
fn parse_search(args: &[Bytes], family: Family, zset: Option<&SortedSet>) -> CmdResult<Search> {
    let mut s = Search {
        center: None,
        shape: None,
        unit: 1.0,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        any: false,
        count: 0,
        order: Order::None,
        store: None,
        store_dist: false,
    };
    let base = match family {
        Family::Radius { .. } => {
            s.center = Some(parse_point(&args[2], &args[3])?);
            let (r, unit) = parse_radius(&args[4], &args[5])?;
            (s.shape, s.unit) = (Some(Shape::Radius(r)), unit);
            6
        }
        Family::ByMember { .. } => {
            // A missing key still has its options read, for the reply's shape.
            if let Some(center) = member_point(zset, &args[2])? {
                s.center = Some(center);
                let (r, unit) = parse_radius(&args[3], &args[4])?;
                (s.shape, s.unit) = (Some(Shape::Radius(r)), unit);
            }
            5
        }
        Family::Search => 2,
        Family::SearchStore => {
            s.store = Some(args[1].clone());
            3
        }
    };
    let searching = matches!(family, Family::Search | Family::SearchStore);
    let may_store = matches!(
        family,
        Family::Radius { store: true } | Family::ByMember { store: true }
    );
    let (mut from_member, mut from_point, mut by_radius, mut by_box) = (false, false, false, false);
    let opts = &args[base..];
    let mut i = 0;
    while i < opts.len() {
        let left = opts.len() - i - 1;
        match &opts[i].to_ascii_lowercase()[..] {
            b"withdist" => s.with_dist = true,
            b"withhash" => s.with_hash = true,
            b"withcoord" => s.with_coord = true,
            b"any" => s.any = true,
            b"asc" => s.order = Order::Asc,
            b"desc" => s.order = Order::Desc,
            b"count" if left >= 1 => {
                s.count = parse_i64(&opts[i + 1]).ok_or(CmdError::NotInteger)?;
                if s.count <= 0 {
                    return Err(CmdError::CountNotPositive);
                }
                i += 1;
            }
            opt @ (b"store" | b"storedist") if left >= 1 && may_store => {
                s.store = Some(opts[i + 1].clone());
                s.store_dist = opt == b"storedist";
                i += 1;
            }
            b"storedist" if family == Family::SearchStore => s.store_dist = true,
            b"frommember" if left >= 1 && searching && !from_point => {
                if let Some(center) = member_point(zset, &opts[i + 1])? {
                    s.center = Some(center);
                }
                from_member = true;
                i += 1;
            }
            b"fromlonlat" if left >= 2 && searching && !from_member => {
                s.center = Some(parse_point(&opts[i + 1], &opts[i + 2])?);
                from_point = true;
                i += 2;
            }
            b"byradius" if left >= 2 && searching && !by_box => {
                let (r, unit) = parse_radius(&opts[i + 1], &opts[i + 2])?;
                (s.shape, s.unit) = (Some(Shape::Radius(r)), unit);
                by_radius = true;
                i += 2;
            }
            b"bybox" if left >= 3 && searching && !by_radius => {
                let width = parse_float(&opts[i + 1], "width")?;
                let height = parse_float(&opts[i + 2], "height")?;
                if width < 0.0 || height < 0.0 {
                    return Err(CmdError::other("ERR height or width cannot be negative"));
                }
                s.unit = parse_unit(&opts[i + 3])?;
                s.shape = Some(Shape::Box { width, height });
                by_box = true;
                i += 3;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    if s.store.is_some() && (s.with_dist || s.with_hash || s.with_coord) {
        let who = match family {
            Family::SearchStore => "GEOSEARCHSTORE",
            _ => "STORE option in GEORADIUS",
        };
        return Err(CmdError::other(format!(
            "ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = String::from_utf8_lossy(&args[0]);
    if searching && !(from_member || from_point) {
        return Err(CmdError::other(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if searching && !(by_radius || by_box) {
        return Err(CmdError::other(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if s.any && s.count == 0 {
        return Err(CmdError::other(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    Ok(s)
}

/// The matches in Redis's visiting order: cell by cell, by score within
/// a cell; with ANY, stopping once `limit` are found.
fn find(zset: &SortedSet, shape: Shape, center: (f64, f64), limit: usize) -> Vec<Found> {
    let mut found = Vec::new();
    for cell in geohash::search_cells(shape, center) {
        if limit > 0 && found.len() >= limit {
            break;
        }
        let (min, max) = cell.score_range();
        for (member, score) in zset.scores_from(min as f64) {
            if score >= max as f64 || (limit > 0 && found.len() >= limit) {
                break;
            }
            let point = geohash::decode_score(score as u64);
            if let Some(dist) = shape.contains(center, point) {
                found.push(Found {
                    member: member.clone(),
                    score: score as u64,
                    dist,
                    point,
                });
            }
        }
    }
    found
}

fn search(ctx: &mut Ctx, family: Family) -> CmdResult<Reply> {
    let source = match family {
        Family::SearchStore => ctx.arg(2).clone(),
        _ => ctx.arg(1).clone(),
    };
    let args = ctx.args;
    let mut db = ctx.db();
    let zset = db.typed::<SortedSet>(&source)?.map(|z| &*z);
    let opts = parse_search(args, family, zset)?;
    let event = match family {
        Family::SearchStore => Event::Geosearchstore,
        _ => Event::Georadiusstore,
    };
    let (Some(zset), Some(center), Some(shape)) = (zset, opts.center, opts.shape) else {
        return match opts.store {
            Some(dest) => store(&mut db, &dest, Vec::new(), false, event),
            None => Ok(Reply::Array(Vec::new())),
        };
    };
    let limit = if opts.any { opts.count as usize } else { 0 };
    let mut found = find(zset, shape.in_meters(opts.unit), center, limit);
    // COUNT picks the nearest, unless ANY took the first found.
    let order = match opts.order {
        Order::None if opts.count > 0 && !opts.any => Order::Asc,
        order => order,
    };
    match order {
        Order::Asc => found.sort_by(|a, b| a.dist.total_cmp(&b.dist)),
        Order::Desc => found.sort_by(|a, b| b.dist.total_cmp(&a.dist)),
        Order::None => {}
    }
    if opts.count > 0 {
        found.truncate(opts.count as usize);
    }
    for f in &mut found {
        f.dist /= opts.unit;
    }
    if let Some(dest) = opts.store {
        return store(&mut db, &dest, found, opts.store_dist, event);
    }
    let plain = !(opts.with_dist || opts.with_hash || opts.with_coord);
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|f| {
                if plain {
                    return Reply::Bulk(f.member);
                }
                let mut item = vec![Reply::Bulk(f.member)];
                if opts.with_dist {
                    item.push(distance_reply(f.dist));
                }
                if opts.with_hash {
                    item.push(Reply::Int(f.score as i64));
                }
                if opts.with_coord {
                    item.push(Reply::Array(vec![
                        Reply::Coord(f.point.0),
                        Reply::Coord(f.point.1),
                    ]));
                }
                Reply::Array(item)
            })
            .collect(),
    ))
}

/// STORE / STOREDIST: the matches as a sorted set scored by geohash or by
/// distance; none deletes the destination.
fn store(
    db: &mut Db,
    dest: &[u8],
    found: Vec<Found>,
    by_dist: bool,
    event: Event,
) -> CmdResult<Reply> {
    let stored = found.len() as i64;
    let Some(first) = found.first() else {
        if db.remove(dest)?.is_some() {
            db.modified(dest, Event::Del)?;
        }
        return Ok(Reply::Int(0));
    };
    let limits = db.limits();
    let mut zset = SortedSet::for_first_member(&first.member, &limits);
    for f in found {
        let score = if by_dist { f.dist } else { f.score as f64 };
        zset.insert(f.member, score, &limits);
    }
    db.insert(dest, Value::ZSet(Box::new(zset)), Ttl::Clear)?;
    db.modified(dest, event)?;
    Ok(Reply::Int(stored))
}

pub fn georadius(ctx: &mut Ctx) -> CmdResult<Reply> {
    search(ctx, Family::Radius { store: true })
}

pub fn georadius_ro(ctx: &mut Ctx) -> CmdResult<Reply> {
    search(ctx, Family::Radius { store: false })
}

pub fn georadiusbymember(ctx: &mut Ctx) -> CmdResult<Reply> {
    search(ctx, Family::ByMember { store: true })
}

pub fn georadiusbymember_ro(ctx: &mut Ctx) -> CmdResult<Reply> {
    search(ctx, Family::ByMember { store: false })
}

pub fn geosearch(ctx: &mut Ctx) -> CmdResult<Reply> {
    search(ctx, Family::Search)
}

pub fn geosearchstore(ctx: &mut Ctx) -> CmdResult<Reply> {
    search(ctx, Family::SearchStore)
}

pub(in crate::command) static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("geoadd", -5, Group::Geo, geoadd).flags(WRITE | DENYOOM).acl(GEO).keys(&key1(RW_UPDATE))
        .syntax("key [NX | XX] [CH] (longitude latitude member)...")
        .doc("3.2.0", "Adds points (longitude, latitude, member) to a geo set, a sorted set scored by geohash."),
    CommandSpec::new("geodist", -4, Group::Geo, geodist).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key member1 member2 [M | KM | FT | MI]")
        .doc("3.2.0", "Returns the distance between two members of a geo set."),
    CommandSpec::new("geohash", -2, Group::Geo, geohash).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key [member...]")
        .doc("3.2.0", "Returns members' positions as standard 11-character geohash strings."),
    CommandSpec::new("geopos", -2, Group::Geo, geopos).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key [member...]")
        .doc("3.2.0", "Returns members' longitudes and latitudes."),
    CommandSpec::new("georadius", -6, Group::Geo, georadius).records_itself().flags(WRITE | DENYOOM).acl(GEO)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), KeySpec::keyword("STORE", 6, OW_UPDATE), KeySpec::keyword("STOREDIST", 6, OW_UPDATE)])
        .syntax("key longitude latitude radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]")
        .doc("3.2.0", "Finds the members within a radius of a point, optionally storing them."),
    CommandSpec::new("georadius_ro", -6, Group::Geo, georadius_ro).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key longitude latitude radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]")
        .doc("3.2.10", "Finds the members within a radius of a point."),
    CommandSpec::new("georadiusbymember", -5, Group::Geo, georadiusbymember).records_itself().flags(WRITE | DENYOOM).acl(GEO)
        .keys(&[KeySpec::range(1, 0, 1, RO_ACCESS), KeySpec::keyword("STORE", 5, OW_UPDATE), KeySpec::keyword("STOREDIST", 5, OW_UPDATE)])
        .syntax("key member radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]")
        .doc("3.2.0", "Finds the members within a radius of a member, optionally storing them."),
    CommandSpec::new("georadiusbymember_ro", -5, Group::Geo, georadiusbymember_ro).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key member radius (M | KM | FT | MI) [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]")
        .doc("3.2.10", "Finds the members within a radius of a member."),
    CommandSpec::new("geosearch", -7, Group::Geo, geosearch).flags(READONLY).acl(GEO).keys(&key1(RO_ACCESS))
        .syntax("key (FROMMEMBER member | FROMLONLAT longitude latitude) (BYRADIUS radius (M | KM | FT | MI) | BYBOX width height (M | KM | FT | MI)) [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]")
        .doc("6.2.0", "Finds the members within a radius or box around a member or a point."),
    CommandSpec::new("geosearchstore", -8, Group::Geo, geosearchstore).records_itself().flags(WRITE | DENYOOM).acl(GEO)
        .keys(&[KeySpec::range(1, 0, 1, OW_UPDATE), KeySpec::range(2, 0, 1, RO_ACCESS)])
        .syntax("destination source (FROMMEMBER member | FROMLONLAT longitude latitude) (BYRADIUS radius (M | KM | FT | MI) | BYBOX width height (M | KM | FT | MI)) [ASC | DESC] [COUNT count [ANY]] [STOREDIST]")
        .doc("6.2.0", "Stores the members GEOSEARCH would find as a sorted set."),
];
