//! The part of `onnx.proto` (ONNX's protobuf schema, proto2) that a plain inference graph needs,
//! as `prost` messages with the schema's field numbers. Fields this crate never writes
//! (training info, functions, sparse tensors, sequence and map types, external data) are left
//! out: protobuf readers skip what they do not see and treat missing fields as absent.
//!
//! The singular fields of `AttributeProto` are `Option`s: the schema is proto2, where a field
//! is either present or not, and ONNX's checker requires exactly one value field of an
//! attribute to be present, also when its value is 0 (proto3-style encoding would drop it).

/// A whole model: the IR version, the operator sets it imports, the graph and metadata.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// The IR version the model follows (see [`super::IR_VERSION`]).
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// The operator sets the graph's nodes come from (the default domain `""` and its opset).
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// The tool that wrote the model.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// Its version.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// Reverse-DNS namespace of the model (may be empty).
    #[prost(string, tag = "4")]
    pub domain: String,
    /// The model's own version number.
    #[prost(int64, tag = "5")]
    pub model_version: i64,
    /// Free text.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// The computation.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// Named strings a reader can show (`onnxruntime`: `get_modelmeta().custom_metadata_map`).
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// One key and its value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// An operator set: a domain (`""` is the default ONNX domain) and its version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// The domain.
    #[prost(string, tag = "1")]
    pub domain: String,
    /// The opset version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// A graph: nodes in topological order, constant tensors, inputs and outputs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// The nodes, each reading values produced before it.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// The graph's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Constant tensors (weights), named as the nodes read them.
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Free text.
    #[prost(string, tag = "10")]
    pub doc_string: String,
    /// The inputs the caller feeds.
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// The outputs the caller reads.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
}

/// One operator application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Names of the values it reads (`""` for a skipped optional input).
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Names of the values it produces.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// The node's name (unique in the graph).
    #[prost(string, tag = "3")]
    pub name: String,
    /// The operator (`MatMul`, `Relu`, ...).
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// The operator's domain (`""`: ONNX's own).
    #[prost(string, tag = "7")]
    pub domain: String,
    /// The operator's attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// Free text.
    #[prost(string, tag = "6")]
    pub doc_string: String,
}

/// A named attribute of a node: exactly one value field is present, the one `type` names.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Which value field is present ([`AttributeType`] as its number).
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// A float value.
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    /// An integer value.
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    /// A string value (bytes).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub s: Option<Vec<u8>>,
    /// A tensor value.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// Float values.
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    /// Integer values.
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
}

/// The value kinds of [`AttributeProto::type`] this crate writes (numbers from `onnx.proto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum AttributeType {
    /// `f`.
    Float = 1,
    /// `i`.
    Int = 2,
    /// `s`.
    String = 3,
    /// `t`.
    Tensor = 4,
    /// `floats`.
    Floats = 6,
    /// `ints`.
    Ints = 7,
}

/// A tensor: element type, dimensions and little-endian data (`raw_data`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// The dimensions (none for a scalar).
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// The element type ([`DataType`] as its number).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// The name nodes read it by (for an initializer).
    #[prost(string, tag = "8")]
    pub name: String,
    /// The elements, row-major, each in its type's little-endian bytes.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// Free text.
    #[prost(string, tag = "12")]
    pub doc_string: String,
}

/// Element types this crate writes (numbers from `onnx.proto`'s `TensorProto.DataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum DataType {
    /// 32-bit float.
    Float = 1,
    /// 64-bit signed integer.
    Int64 = 7,
    /// Boolean.
    Bool = 9,
    /// 64-bit float.
    Double = 11,
}

/// A graph input's or output's name and type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its type.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
    /// Free text.
    #[prost(string, tag = "3")]
    pub doc_string: String,
}

/// A value's type; only tensors here.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// The tensor type.
    #[prost(oneof = "TypeValue", tags = "1")]
    pub value: Option<TypeValue>,
}

/// The kinds of [`TypeProto`] (only tensors).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum TypeValue {
    /// A tensor of one element type and shape.
    #[prost(message, tag = "1")]
    TensorType(TensorTypeProto),
}

/// `TypeProto.Tensor`: element type and shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorTypeProto {
    /// The element type ([`DataType`] as its number).
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// The shape.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// A shape: one entry per dimension.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// The dimensions.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// One dimension: a fixed size or a symbolic name (`"N"` for the batch).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// The size or the name.
    #[prost(oneof = "DimensionValue", tags = "1, 2")]
    pub value: Option<DimensionValue>,
}

/// A dimension's size or name.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum DimensionValue {
    /// A fixed size.
    #[prost(int64, tag = "1")]
    DimValue(i64),
    /// A symbolic size, the same for every value that names it.
    #[prost(string, tag = "2")]
    DimParam(String),
}
