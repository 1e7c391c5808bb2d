//! A small ONNX writer: a [`GraphBuilder`] that appends operator nodes and constant tensors in
//! order and turns them into a [`proto::ModelProto`], serialised with `prost`. It knows nothing
//! of ARMAC; [`crate::nn::armac`] builds its policy graph with it
//! ([`ArmacPolicyNet::to_onnx`](crate::nn::armac::ArmacPolicyNet::to_onnx)).
//!
//! Models target ONNX opset [`OPSET`] of the default domain and IR version [`IR_VERSION`]
//! (the pair ONNX 1.12 introduced; every runtime released since reads it). burn imports ONNX
//! but has no exporter, hence this module.

pub mod proto;

use proto::{
    AttributeProto, AttributeType, DataType, Dimension, DimensionValue, GraphProto, ModelProto,
    NodeProto, OperatorSetIdProto, StringStringEntryProto, TensorProto, TensorShapeProto,
    TensorTypeProto, TypeProto, TypeValue, ValueInfoProto,
};
use std::collections::HashSet;

/// The opset version of the default ONNX domain the graphs import.
pub const OPSET: i64 = 17;

/// The IR version that goes with [`OPSET`] (ONNX 1.12: IR 8, opset 17).
pub const IR_VERSION: i64 = 8;

/// One dimension of a graph input's or output's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size.
    Fixed(usize),
    /// A size the caller chooses, named (every value naming it has the same size).
    Named(&'static str),
}

/// Builds one graph: inputs, nodes in the order they are added (each reads values added before
/// it, so the order is topological), constant tensors and outputs.
#[derive(Debug, Default)]
pub struct GraphBuilder {
    nodes: Vec<NodeProto>,
    initializers: Vec<TensorProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    names: HashSet<String>,
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Claims `name` for a value.
    ///
    /// # Panics
    /// If a value of that name exists (a bug of the graph's author).
    fn claim(&mut self, name: &str) -> String {
        assert!(
            self.names.insert(name.to_string()),
            "ONNX graph: two values named `{name}`"
        );
        name.to_string()
    }

    /// Adds a graph input `name` of element type `elem` and shape `dims`; returns its name.
    pub fn input(&mut self, name: &str, elem: DataType, dims: &[Dim]) -> String {
        let name = self.claim(name);
        self.inputs.push(value_info(&name, elem, dims));
        name
    }

    /// Makes `value` a graph output named `name` (through an `Identity` node when the names
    /// differ) of element type `elem` and shape `dims`.
    pub fn output(&mut self, value: &str, name: &str, elem: DataType, dims: &[Dim]) {
        if value != name {
            let name = self.claim(name);
            self.push_node("Identity", &[value], &name, Vec::new());
        }
        self.outputs.push(value_info(name, elem, dims));
    }

    /// A constant float tensor of shape `dims` (row-major `data`) named `name`; returns its name.
    ///
    /// # Panics
    /// If `data` does not have the shape's number of elements.
    pub fn constant_f32(&mut self, name: &str, dims: &[usize], data: &[f32]) -> String {
        let bytes = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant(name, DataType::Float, dims, data.len(), bytes)
    }

    /// A constant 64-bit float tensor (see [`Self::constant_f32`]).
    pub fn constant_f64(&mut self, name: &str, dims: &[usize], data: &[f64]) -> String {
        let bytes = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant(name, DataType::Double, dims, data.len(), bytes)
    }

    /// A constant 64-bit integer tensor (see [`Self::constant_f32`]).
    pub fn constant_i64(&mut self, name: &str, dims: &[usize], data: &[i64]) -> String {
        let bytes = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant(name, DataType::Int64, dims, data.len(), bytes)
    }

    fn constant(
        &mut self,
        name: &str,
        elem: DataType,
        dims: &[usize],
        len: usize,
        raw_data: Vec<u8>,
    ) -> String {
        assert_eq!(
            dims.iter().product::<usize>(),
            len,
            "ONNX constant `{name}`: {len} values for shape {dims:?}"
        );
        let name = self.claim(name);
        self.initializers.push(TensorProto {
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type: elem as i32,
            name: name.clone(),
            raw_data,
            doc_string: String::new(),
        });
        name
    }

    /// Appends a node applying `op_type` to `inputs` with `attributes`; returns the name of its
    /// single output (`<op>_<k>`, numbered in the order of the nodes).
    pub fn op(
        &mut self,
        op_type: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
    ) -> String {
        let name = format!("{}_{}", op_type.to_lowercase(), self.nodes.len());
        let name = self.claim(&name);
        self.push_node(op_type, inputs, &name, attributes);
        name
    }

    fn push_node(
        &mut self,
        op_type: &str,
        inputs: &[&str],
        output: &str,
        attrs: Vec<AttributeProto>,
    ) {
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.to_string()],
            name: format!("node_{}", self.nodes.len()),
            op_type: op_type.to_string(),
            domain: String::new(),
            attribute: attrs,
            doc_string: String::new(),
        });
    }

    /// The model: this graph (named `name`, described by `doc`), [`IR_VERSION`], [`OPSET`] of
    /// the default domain, armac as its producer and `metadata` as its key-value properties.
    pub fn finish(self, name: &str, doc: &str, metadata: &[(String, String)]) -> ModelProto {
        ModelProto {
            ir_version: IR_VERSION,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: OPSET,
            }],
            producer_name: "armac".into(),
            producer_version: env!("CARGO_PKG_VERSION").into(),
            domain: String::new(),
            model_version: 1,
            doc_string: doc.into(),
            graph: Some(GraphProto {
                node: self.nodes,
                name: name.into(),
                initializer: self.initializers,
                doc_string: String::new(),
                input: self.inputs,
                output: self.outputs,
            }),
            metadata_props: metadata
                .iter()
                .map(|(k, v)| StringStringEntryProto {
                    key: k.clone(),
                    value: v.clone(),
                })
                .collect(),
        }
    }
}

/// The protobuf bytes of `model` (what an `.onnx` file holds).
pub fn encode(model: &ModelProto) -> Vec<u8> {
    prost::Message::encode_to_vec(model)
}

/// An integer attribute.
pub fn attr_int(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i: Some(value),
        ..AttributeProto::default()
    }
}

/// A float attribute.
pub fn attr_float(name: &str, value: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Float as i32,
        f: Some(value),
        ..AttributeProto::default()
    }
}

/// A list-of-integers attribute.
pub fn attr_ints(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: values.to_vec(),
        ..AttributeProto::default()
    }
}

/// A tensor value's name, element type and shape.
fn value_info(name: &str, elem: DataType, dims: &[Dim]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                Dim::Fixed(n) => DimensionValue::DimValue(*n as i64),
                Dim::Named(s) => DimensionValue::DimParam(s.to_string()),
            }),
        })
        .collect();
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(TypeValue::TensorType(TensorTypeProto {
                elem_type: elem as i32,
                shape: Some(TensorShapeProto { dim }),
            })),
        }),
        doc_string: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_graph_round_trips_through_protobuf_with_zero_valued_attributes_present() {
        let mut g = GraphBuilder::new();
        let x = g.input("x", DataType::Float, &[Dim::Named("N"), Dim::Fixed(3)]);
        let w = g.constant_f32("w", &[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let y = g.op("MatMul", &[&x, &w], Vec::new());
        let z = g.op("Softmax", &[&y], vec![attr_int("axis", 0)]);
        g.output(&z, "y", DataType::Float, &[Dim::Named("N"), Dim::Fixed(2)]);
        let model = g.finish("g", "doc", &[("k".into(), "v".into())]);
        let back = ModelProto::decode(&encode(&model)[..]).expect("decodes");
        assert_eq!(back, model);
        let graph = back.graph.expect("graph");
        assert_eq!((back.ir_version, back.opset_import[0].version), (8, 17));
        assert_eq!(
            graph.node.len(),
            3,
            "MatMul, Softmax and the output's Identity"
        );
        // proto2 presence: an attribute of value 0 is still written (ONNX's checker needs it).
        assert_eq!(graph.node[1].attribute[0].i, Some(0));
        assert_eq!(graph.initializer[0].raw_data.len(), 6 * 4);
    }

    #[test]
    #[should_panic(expected = "two values named `x`")]
    fn duplicate_value_names_are_refused() {
        let mut g = GraphBuilder::new();
        g.input("x", DataType::Float, &[Dim::Fixed(1)]);
        g.constant_f32("x", &[1], &[0.0]);
    }
}
