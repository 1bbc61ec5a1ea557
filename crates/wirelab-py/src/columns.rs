//! Rows of a flat `Serialize` struct to Arrow columns: a serde serializer that appends
//! each field to its column's builder (the field's position picks the column, so no name
//! lookup per value). The tables `wirelab-run` writes with the csv crate are flat structs
//! of integers, floats, booleans, strings and `Option`s of those, and that is all this
//! accepts (anything else is an error, and Python reads the CSV file instead).
//!
//! Column types follow what `pd.read_csv` makes of the CSV text: every integer is int64,
//! every float float64; a column whose every value is `None` has Arrow's Null type.
//! (serde_arrow does the general case, at ~10× the cost per value here: it looks fields
//! up by name and traces types first.)
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, NullArray, RecordBatch};
use arrow_schema::{Field, Schema};
use serde::ser::{self, Impossible, Serialize, SerializeStruct, Serializer};
use std::fmt;
use std::sync::Arc;

/// Why rows could not become columns.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Error {}
impl ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// One column: `Pending(n)` until its first value (after `n` nulls).
enum Col {
    Pending(usize),
    Int(Int64Builder),
    Float(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

/// `fn NAME(&mut self, v: TY)`: appends `v`, turning a column of only nulls so far into a
/// `VARIANT` column (its type is fixed by the first value); a value of another type is an error.
macro_rules! append {
    ($name:ident, $ty:ty, $variant:ident, $builder:ty, $what:literal) => {
        fn $name(&mut self, v: $ty) -> Result<(), Error> {
            if let Col::Pending(n) = *self {
                let mut b = <$builder>::new();
                b.append_nulls(n);
                *self = Col::$variant(b);
            }
            match self {
                Col::$variant(b) => b.append_value(v),
                _ => return Err(Error(concat!($what, " in a column of another type").into())),
            }
            Ok(())
        }
    };
}

impl Col {
    fn null(&mut self) {
        match self {
            Col::Pending(n) => *n += 1,
            Col::Int(b) => b.append_null(),
            Col::Float(b) => b.append_null(),
            Col::Bool(b) => b.append_null(),
            Col::Str(b) => b.append_null(),
        }
    }

    append!(int, i64, Int, Int64Builder, "an integer");
    append!(float, f64, Float, Float64Builder, "a float");
    append!(bool, bool, Bool, BooleanBuilder, "a boolean");
    append!(str, &str, Str, StringBuilder, "a string");

    fn finish(&mut self, rows: usize) -> ArrayRef {
        match self {
            Col::Pending(_) => Arc::new(NullArray::new(rows)),
            Col::Int(b) => Arc::new(b.finish()),
            Col::Float(b) => Arc::new(b.finish()),
            Col::Bool(b) => Arc::new(b.finish()),
            Col::Str(b) => Arc::new(b.finish()),
        }
    }
}

/// The columns of a table of flat structs, in field order (the CSV header's order);
/// `None` for no rows.
pub fn to_batch<T: Serialize>(rows: &[T]) -> Result<Option<RecordBatch>, Error> {
    if rows.is_empty() {
        return Ok(None);
    }
    let mut t = Table { names: Vec::new(), cols: Vec::new(), first: true };
    for r in rows {
        r.serialize(Row { t: &mut t, i: 0 })?;
        t.first = false;
    }
    let mut fields = Vec::with_capacity(t.cols.len());
    let mut arrays = Vec::with_capacity(t.cols.len());
    for (name, col) in t.names.iter().zip(t.cols.iter_mut()) {
        let a = col.finish(rows.len());
        fields.push(Field::new(*name, a.data_type().clone(), a.null_count() > 0 || a.data_type().is_null()));
        arrays.push(a);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map(Some).map_err(|e| Error(e.to_string()))
}

struct Table {
    names: Vec<&'static str>,
    cols: Vec<Col>,
    first: bool,
}

/// Serializes one row (a struct) into the table.
struct Row<'a> {
    t: &'a mut Table,
    i: usize,
}

/// Serializes one value into its column.
struct Value<'a>(&'a mut Col);

macro_rules! not_flat {
    ($($f:ident($($t:ty),*)),* $(,)?) => {
        $(fn $f(self, $(_: $t),*) -> Result<Self::Ok, Error> {
            Err(Error(concat!("not a flat table: ", stringify!($f)).into()))
        })*
    };
}

impl<'a> Serializer for Row<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Error> {
        Ok(self)
    }
    not_flat!(serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32), serialize_i64(i64),
        serialize_u8(u8), serialize_u16(u16), serialize_u32(u32), serialize_u64(u64), serialize_f32(f32), serialize_f64(f64),
        serialize_char(char), serialize_str(&str), serialize_bytes(&[u8]), serialize_none(), serialize_unit(),
        serialize_unit_struct(&'static str), serialize_unit_variant(&'static str, u32, &'static str));
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), Error> {
        Err(Error("not a flat table: a row is an Option".into()))
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<(), Error> {
        Err(Error("not a flat table: an enum row".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(Error("not a flat table: a sequence".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error("not a flat table: a tuple".into()))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error("not a flat table: a tuple struct".into()))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error("not a flat table: a tuple variant".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error("not a flat table: a map".into()))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error("not a flat table: a struct variant".into()))
    }
}

impl SerializeStruct for Row<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, name: &'static str, v: &T) -> Result<(), Error> {
        if self.t.first {
            self.t.names.push(name);
            self.t.cols.push(Col::Pending(0));
        } else if self.t.names.get(self.i) != Some(&name) {
            return Err(Error(format!("field {name} out of order")));
        }
        v.serialize(Value(&mut self.t.cols[self.i]))?;
        self.i += 1;
        Ok(())
    }

    fn end(self) -> Result<(), Error> {
        if self.i != self.t.cols.len() {
            return Err(Error("rows of different lengths".into()));
        }
        Ok(())
    }
}

fn int<T: TryInto<i64>>(c: &mut Col, v: T) -> Result<(), Error> {
    c.int(v.try_into().map_err(|_| Error("an integer beyond int64".into()))?)
}

impl<'a> Serializer for Value<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.0.bool(v)
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        int(self.0, v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.0.float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.0.float(v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.0.str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.0.str(v)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.0.null();
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.0.null();
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        self.0.str(variant) // as the csv crate writes a unit variant: its name
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Error> {
        Err(Error("a bytes field".into()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.0.null();
        Ok(())
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<(), Error> {
        Err(Error("an enum field with data".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(Error("a sequence field".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error("a tuple field".into()))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error("a tuple struct field".into()))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error("a tuple variant field".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error("a map field".into()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(Error("a nested struct field".into()))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error("a struct variant field".into()))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use arrow_schema::DataType;
    use arrow_array::Array;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Row {
        a: u32,
        b: Option<f64>,
        c: &'static str,
        d: Option<u64>,
        e: bool,
    }

    /// Columns in field order, integers as int64, a column `None` until late still typed
    /// by its values, an all-`None` column of Arrow's Null type, nulls where `None`.
    #[test]
    fn flat_rows_become_typed_columns() {
        let mut v: Vec<Row> = (0..5000).map(|i| Row { a: i, b: None, c: "x", d: None, e: i % 2 == 0 }).collect();
        v[4001].b = Some(2.5);
        let b = to_batch(&v).unwrap().unwrap();
        let s = b.schema();
        let types: Vec<(&str, &DataType)> = s.fields().iter().map(|f| (f.name().as_str(), f.data_type())).collect();
        assert_eq!(
            types,
            [("a", &DataType::Int64), ("b", &DataType::Float64), ("c", &DataType::Utf8), ("d", &DataType::Null), ("e", &DataType::Boolean)]
        );
        assert_eq!((b.num_rows(), b.column(1).null_count(), b.column(0).null_count()), (5000, 4999, 0));
        let bcol = b.column(1).as_any().downcast_ref::<arrow_array::Float64Array>().unwrap();
        assert_eq!((bcol.value(4001), bcol.is_null(4000)), (2.5, true));
        assert!(to_batch::<Row>(&[]).unwrap().is_none());
    }

    #[test]
    fn what_is_not_a_flat_table_is_an_error() {
        #[derive(Serialize)]
        struct Nested {
            v: Vec<u8>,
        }
        assert!(to_batch(&[Nested { v: vec![1] }]).unwrap_err().to_string().contains("sequence"));
        assert!(to_batch(&[u64::MAX]).is_err());
        #[derive(Serialize)]
        struct Big {
            v: u64,
        }
        assert!(to_batch(&[Big { v: u64::MAX }]).unwrap_err().to_string().contains("beyond int64"));
    }
}
