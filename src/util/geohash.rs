//! Geohashes as Redis's geo commands use them: longitude and latitude cut
//! into 26 bits each and interleaved into a 52-bit integer, stored as a
//! sorted set score. Latitudes stop at ±85.05112878 (the Web Mercator
//! limit), so the cells are not those of the standard geohash, which GEOHASH
//! re-encodes to. Distances are haversine on Redis's earth radius, so every
//! number matches Redis's replies digit for digit.

pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Bits per coordinate at full precision.
pub const STEP_MAX: u8 = 26;

const EARTH_RADIUS_M: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The ranges rlockd (and Redis) encode scores in.
pub const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A cell: `step` bits of each coordinate, interleaved (latitude in the
/// even bits, longitude in the odd ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hash {
    pub bits: u64,
    pub step: u8,
}

impl Hash {
    /// The cell that covers nothing (a neighbour left out of a search).
    const NONE: Hash = Hash { bits: 0, step: 0 };

    fn is_none(self) -> bool {
        self == Hash::NONE
    }

    /// The scores at full precision that fall in this cell: `[min, max)`.
    pub fn score_range(self) -> (u64, u64) {
        let shift = 52 - 2 * u32::from(self.step);
        (self.bits << shift, (self.bits + 1) << shift)
    }
}

/// The cell's extent in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

fn squash(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0x0000_0000_FFFF_FFFF) as u32
}

/// `None` outside the ranges, or outside the Mercator limits at all.
pub fn encode(long_range: Range, lat_range: Range, lon: f64, lat: f64, step: u8) -> Option<Hash> {
    let outside = |v: f64, r: Range| v < r.min || v > r.max;
    if outside(lon, LONG_RANGE)
        || outside(lat, LAT_RANGE)
        || outside(lon, long_range)
        || outside(lat, lat_range)
    {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min) * cells;
    let lon_offset = (lon - long_range.min) / (long_range.max - long_range.min) * cells;
    // Truncated as C's conversion to a 32-bit unsigned does.
    let bits = spread(lat_offset as u32) | (spread(lon_offset as u32) << 1);
    Some(Hash { bits, step })
}

/// The 52-bit score of a point, or `None` outside the Mercator limits.
pub fn encode_score(lon: f64, lat: f64) -> Option<u64> {
    encode(LONG_RANGE, LAT_RANGE, lon, lat, STEP_MAX).map(|h| h.bits)
}

pub fn decode(long_range: Range, lat_range: Range, hash: Hash) -> Area {
    let cells = (1u64 << hash.step) as f64;
    let lat_cell = f64::from(squash(hash.bits));
    let lon_cell = f64::from(squash(hash.bits >> 1));
    let lat_scale = lat_range.max - lat_range.min;
    let lon_scale = long_range.max - long_range.min;
    Area {
        latitude: Range {
            min: lat_range.min + (lat_cell / cells) * lat_scale,
            max: lat_range.min + ((lat_cell + 1.0) / cells) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (lon_cell / cells) * lon_scale,
            max: long_range.min + ((lon_cell + 1.0) / cells) * lon_scale,
        },
    }
}

/// The centre of the cell a score names: (longitude, latitude).
pub fn decode_score(score: u64) -> (f64, f64) {
    let area = decode(
        LONG_RANGE,
        LAT_RANGE,
        Hash {
            bits: score,
            step: STEP_MAX,
        },
    );
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The standard 11-character geohash of a score's point (GEOHASH).
pub fn standard_geohash(score: u64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let world = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(LONG_RANGE, world, lon, lat, STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    // 52 bits make ten characters; the eleventh is always '0'.
    for (i, c) in out.iter_mut().take(10).enumerate() {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

fn to_rad(deg: f64) -> f64 {
    deg * (std::f64::consts::PI / 180.0)
}

fn to_deg(rad: f64) -> f64 {
    rad / (std::f64::consts::PI / 180.0)
}

pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (to_rad(lat2) - to_rad(lat1)).abs()
}

/// Haversine distance in meters.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((to_rad(lon2) - to_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (to_rad(lat1), to_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// The area a search covers, in meters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Radius(f64),
    Box { width: f64, height: f64 },
}

impl Shape {
    /// The shape with its sizes given in units of `unit` meters.
    pub fn in_meters(self, unit: f64) -> Shape {
        match self {
            Shape::Radius(r) => Shape::Radius(r * unit),
            Shape::Box { width, height } => Shape::Box {
                width: width * unit,
                height: height * unit,
            },
        }
    }

    /// The distance from the centre of a point inside the shape, or
    /// `None` if the point is outside.
    pub fn contains(self, center: (f64, f64), point: (f64, f64)) -> Option<f64> {
        let ((x1, y1), (x2, y2)) = (center, point);
        match self {
            Shape::Radius(r) => Some(distance(x1, y1, x2, y2)).filter(|d| *d <= r),
            Shape::Box { width, height } => {
                if lat_distance(y2, y1) > height / 2.0 || distance(x2, y2, x1, y2) > width / 2.0 {
                    return None;
                }
                Some(distance(x1, y1, x2, y2))
            }
        }
    }

    /// Half the extent in each direction: (east-west, north-south).
    fn half_extent(self) -> (f64, f64) {
        match self {
            Shape::Radius(r) => (r, r),
            Shape::Box { width, height } => (width / 2.0, height / 2.0),
        }
    }

    /// The distance from the centre to the farthest corner.
    fn reach(self) -> f64 {
        match self {
            Shape::Radius(r) => r,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        }
    }
}

/// How many bits per coordinate a cell needs for its neighbours to cover
/// `range` meters around a point at `lat`.
fn steps_for_range(mut range: f64, lat: f64) -> u8 {
    if range == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Cells narrow towards the poles.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// (min lon, min lat, max lon, max lat) around the centre.
fn bounding_box(shape: Shape, (lon, lat): (f64, f64)) -> [f64; 4] {
    let (half_width, half_height) = shape.half_extent();
    let lat_delta = to_deg(half_height / EARTH_RADIUS_M);
    let lon_delta_top = to_deg(half_width / EARTH_RADIUS_M / to_rad(lat + lat_delta).cos());
    let lon_delta_bottom = to_deg(half_width / EARTH_RADIUS_M / to_rad(lat - lat_delta).cos());
    // Away from the equator, the wider edge is the one nearer to it.
    let lon_delta = if lat < 0.0 {
        lon_delta_bottom
    } else {
        lon_delta_top
    };
    [
        lon - lon_delta,
        lat - lat_delta,
        lon + lon_delta,
        lat + lat_delta,
    ]
}

/// Moves a cell by one along longitude (`x`) or latitude (`y`), wrapping.
fn moved(hash: Hash, dx: i8, dy: i8) -> Hash {
    const ODD: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let width = 64 - 2 * u32::from(hash.step);
    let shift = |bits: u64, own: u64, other: u64, d: i8| {
        let filler = other >> width;
        let moved = match d {
            0 => return bits & own,
            d if d > 0 => (bits & own).wrapping_add(filler + 1),
            _ => ((bits & own) | filler).wrapping_sub(filler + 1),
        };
        moved & (own >> width)
    };
    let x = shift(hash.bits, ODD, EVEN, dx);
    let y = shift(hash.bits, EVEN, ODD, dy);
    Hash {
        bits: x | y,
        step: hash.step,
    }
}

/// The cells a search visits, in the order Redis visits them: the centre's
/// cell, then north, south, east, west, north-east, north-west, south-east,
/// south-west. Cells that cannot hold a match are left out.
pub fn search_cells(shape: Shape, center: (f64, f64)) -> Vec<Hash> {
    let (lon, lat) = center;
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape, center);
    let mut step = steps_for_range(shape.reach(), lat);
    let cells_at = |step: u8| {
        let hash = encode(LONG_RANGE, LAT_RANGE, lon, lat, step).unwrap_or(Hash { bits: 0, step });
        // north, south, east, west, NE, NW, SE, SW
        let around = [
            (0, 1),
            (0, -1),
            (1, 0),
            (-1, 0),
            (1, 1),
            (-1, 1),
            (1, -1),
            (-1, -1),
        ]
        .map(|(dx, dy)| moved(hash, dx, dy));
        (hash, around)
    };
    let (mut hash, mut around) = cells_at(step);
    let area_of = |h: Hash| decode(LONG_RANGE, LAT_RANGE, h);
    // A neighbour too narrow to reach the box's edge: one step coarser.
    let too_fine = area_of(around[0]).latitude.max < max_lat
        || area_of(around[1]).latitude.min > min_lat
        || area_of(around[2]).longitude.max < max_lon
        || area_of(around[3]).longitude.min > min_lon;
    if step > 1 && too_fine {
        step -= 1;
        (hash, around) = cells_at(step);
    }
    if step >= 2 {
        let area = area_of(hash);
        let mut drop = |indexes: [usize; 3]| indexes.iter().for_each(|&i| around[i] = Hash::NONE);
        if area.latitude.min < min_lat {
            drop([1, 7, 6]);
        }
        if area.latitude.max > max_lat {
            drop([0, 4, 5]);
        }
        if area.longitude.min < min_lon {
            drop([3, 7, 5]);
        }
        if area.longitude.max > max_lon {
            drop([2, 6, 4]);
        }
    }
    let mut cells = vec![hash];
    // Redis never compares a neighbour with the centre's cell.
    let mut last = None;
    for cell in around {
        if cell.is_none() {
            continue;
        }
        // Huge radii make neighbours repeat; each is searched once in a row.
        if last == Some(cell) {
            continue;
        }
        cells.push(cell);
        last = Some(cell);
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_match_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo" stores this score.
        assert_eq!(encode_score(13.361389, 38.115556), Some(3479099956230698));
        let (lon, lat) = decode_score(3479099956230698);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(&standard_geohash(3479099956230698), b"sqc8b49rny0");
        assert_eq!(encode_score(181.0, 0.0), None);
        assert_eq!(encode_score(0.0, 85.06), None);
    }

    #[test]
    fn distances_match_redis() {
        let (a, b) = (
            decode_score(3479099956230698),
            decode_score(encode_score(15.087269, 37.502669).unwrap()),
        );
        // GEODIST Sicily Palermo Catania
        assert_eq!(
            format!("{:.4}", distance(a.0, a.1, b.0, b.1)),
            "166274.1516"
        );
    }

    #[test]
    fn neighbours_wrap() {
        let h = Hash { bits: 0, step: 1 };
        let east = moved(h, 1, 0);
        assert_eq!(east.bits, 0b10);
        assert_eq!(moved(east, 1, 0).bits, 0);
        assert_eq!(moved(h, 0, -1).bits, 0b01);
    }
}
