//! The logical graph: vertices, edges with their partitioning, and tracking components.
//!
//! This is the untyped description the runtime validates and the tracker is configured from; the
//! typed operators live in the runtime's dataflow builder.

/// Index of a vertex in its dataflow, in creation order (which is a topological order: an operator
/// can only consume streams that already exist).
pub type VertexId = usize;

/// Index of a tracking component. Components form a DAG numbered in topological order
/// (docs/design.md, "Tracking components"); `xorflow-tracking` keeps one table per component.
pub type ComponentId = u32;

/// How elements of an edge are distributed over the instances of the target vertex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partitioning {
    /// Each instance keeps its elements (same worker, no exchange).
    Forward,
    /// Elements go to the target instances in turn, one element at a time (Flink's `rebalance`).
    RoundRobin,
    /// Elements go to instance `hash(key) mod P` (Flink's `keyBy`, timely's `Exchange`).
    Hash,
}

/// A vertex of the logical graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexDesc {
    /// Name given by the job (unique within the dataflow).
    pub name: String,
    /// Tracking component (default: one per vertex, numbered like the vertices); the first of
    /// its instances' components when `instance_components > 0`.
    pub component: ComponentId,
    /// 0: all instances share `component`. n > 0: instance `i` (on global worker `i`) has a
    /// component of its own, `component + i`, so its frontier waits only for what is sent to
    /// it, not for what its upstream sends to the other instances (a window or sink fed by an
    /// exchange: docs/wan.md, "Instance frontiers").
    pub instance_components: usize,
    /// True for sources (they have no inputs and send heartbeats).
    pub is_source: bool,
    /// Number of source instances (sources only).
    pub source_instances: usize,
}

/// An edge of the logical graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeDesc {
    /// Producing vertex.
    pub from: VertexId,
    /// Consuming vertex.
    pub to: VertexId,
    /// Distribution over the consumer's instances.
    pub partitioning: Partitioning,
}

/// The whole logical graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphDesc {
    /// Vertices in creation (topological) order.
    pub vertices: Vec<VertexDesc>,
    /// Edges.
    pub edges: Vec<EdgeDesc>,
}

impl GraphDesc {
    /// Per-component lists of directly upstream components (excluding the component itself), the
    /// input the tracker's topology needs.
    pub fn component_upstream(&self) -> Vec<Vec<ComponentId>> {
        let n = (self.vertices.iter())
            .flat_map(|v| self.components_of(v))
            .map(|c| c as usize + 1)
            .max()
            .unwrap_or(0);
        let mut up: Vec<Vec<ComponentId>> = vec![Vec::new(); n];
        for e in &self.edges {
            let (from, to) = (&self.vertices[e.from], &self.vertices[e.to]);
            for ct in self.components_of(to) {
                for cf in self.components_of(from) {
                    if cf != ct && !up[ct as usize].contains(&cf) {
                        up[ct as usize].push(cf);
                    }
                }
            }
        }
        up
    }

    /// The tracking components of `v`'s instances: `component`, or one per instance.
    pub fn components_of(&self, v: &VertexDesc) -> std::ops::Range<ComponentId> {
        v.component..v.component + v.instance_components.max(1) as ComponentId
    }

    /// A cycle of the vertex graph, as vertex names from a vertex back to itself, if there is one
    /// (markers cannot flow around a cycle: an instance would wait for its own marker).
    pub fn find_cycle(&self) -> Option<Vec<String>> {
        let n = self.vertices.len();
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
        for e in &self.edges {
            out[e.from].push(e.to);
        }
        // Iterative DFS with colours: 0 new, 1 on the stack, 2 done.
        let mut colour = vec![0u8; n];
        let mut parent = vec![usize::MAX; n];
        for root in 0..n {
            if colour[root] != 0 {
                continue;
            }
            let mut stack = vec![(root, 0usize)];
            colour[root] = 1;
            while let Some(&mut (v, ref mut i)) = stack.last_mut() {
                if let Some(&w) = out[v].get(*i) {
                    *i += 1;
                    match colour[w] {
                        0 => {
                            colour[w] = 1;
                            parent[w] = v;
                            stack.push((w, 0));
                        }
                        1 => {
                            let mut path = vec![self.vertices[w].name.clone()];
                            let mut x = v;
                            let mut rev = Vec::new();
                            while x != w {
                                rev.push(self.vertices[x].name.clone());
                                x = parent[x];
                            }
                            path.extend(rev.into_iter().rev());
                            path.push(self.vertices[w].name.clone());
                            return Some(path);
                        }
                        _ => {}
                    }
                } else {
                    colour[v] = 2;
                    stack.pop();
                }
            }
        }
        None
    }

    /// Total number of source instances (each heartbeats on its own).
    pub fn source_instances(&self) -> usize {
        self.vertices
            .iter()
            .filter(|v| v.is_source)
            .map(|v| v.source_instances)
            .sum()
    }

    /// Number of tracking components.
    pub fn components(&self) -> usize {
        self.component_upstream().len()
    }

    /// The graph as text, one vertex per line in creation (topological) order: its name, then
    /// two spaces and either `(source, N instances)` or `<- ` and its inputs, each as
    /// `NAME (forward | round-robin | hash)`. What `EXPLAIN` prints of the dataflow a SQL job
    /// would run; the names are those the status page and the metrics show.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        for (i, v) in self.vertices.iter().enumerate() {
            out.push_str(&v.name);
            if v.is_source {
                out.push_str(&format!("  (source, {} instances)", v.source_instances));
            }
            let inputs: Vec<String> = (self.edges.iter().filter(|e| e.to == i))
                .map(|e| {
                    let how = match e.partitioning {
                        Partitioning::Forward => "forward",
                        Partitioning::RoundRobin => "round-robin",
                        Partitioning::Hash => "hash",
                    };
                    format!("{} ({how})", self.vertices[e.from].name)
                })
                .collect();
            if !inputs.is_empty() {
                out.push_str("  <- ");
                out.push_str(&inputs.join(", "));
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_lists_each_vertex_with_its_inputs() {
        let v = |name: &str, source: bool| VertexDesc {
            name: name.into(),
            component: 0,
            instance_components: 0,
            is_source: source,
            source_instances: if source { 2 } else { 0 },
        };
        let e = |from, to, partitioning| EdgeDesc {
            from,
            to,
            partitioning,
        };
        let g = GraphDesc {
            vertices: vec![v("source: a", true), v("source: b", true), v("join", false)],
            edges: vec![e(0, 2, Partitioning::Hash), e(1, 2, Partitioning::Forward)],
        };
        assert_eq!(
            g.explain(),
            "source: a  (source, 2 instances)\nsource: b  (source, 2 instances)\n\
             join  <- source: a (hash), source: b (forward)\n"
        );
    }

    #[test]
    fn instance_components_fan_in_and_out() {
        let v = |name: &str, c, n| VertexDesc {
            name: name.into(),
            component: c,
            instance_components: n,
            is_source: c == 0,
            source_instances: if c == 0 { 2 } else { 0 },
        };
        let e = |from, to| EdgeDesc {
            from,
            to,
            partitioning: Partitioning::Hash,
        };
        // A window with an instance per worker (3) between a source and a sink.
        let g = GraphDesc {
            vertices: vec![v("s", 0, 0), v("w", 1, 3), v("out", 4, 0)],
            edges: vec![e(0, 1), e(1, 2)],
        };
        assert_eq!(g.components_of(&g.vertices[1]), 1..4);
        assert_eq!(
            g.component_upstream(),
            vec![vec![], vec![0], vec![0], vec![0], vec![1, 2, 3]]
        );
        assert_eq!(g.components(), 5);
    }

    #[test]
    fn component_upstream_of_a_diamond() {
        let v = |name: &str, c| VertexDesc {
            name: name.into(),
            component: c,
            instance_components: 0,
            is_source: c == 0,
            source_instances: if c == 0 { 2 } else { 0 },
        };
        let e = |from, to| EdgeDesc {
            from,
            to,
            partitioning: Partitioning::Forward,
        };
        let g = GraphDesc {
            vertices: vec![v("s", 0), v("a", 1), v("b", 2), v("j", 3)],
            edges: vec![e(0, 1), e(0, 2), e(1, 3), e(2, 3)],
        };
        assert_eq!(
            g.component_upstream(),
            vec![vec![], vec![0], vec![0], vec![1, 2]]
        );
        assert_eq!(g.source_instances(), 2);
        assert_eq!(g.components(), 4);
        assert_eq!(g.find_cycle(), None);
        let mut c = g.clone();
        c.edges.push(e(3, 1));
        assert_eq!(
            c.find_cycle().unwrap(),
            vec!["a".to_string(), "j".into(), "a".into()]
        );
        let mut selfloop = g;
        selfloop.edges.push(e(2, 2));
        assert_eq!(
            selfloop.find_cycle().unwrap(),
            vec!["b".to_string(), "b".into()]
        );
    }
}
