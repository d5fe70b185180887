"""Writes (as protobuf text) a model of N If nodes nested in each other's then-branch, all on one run-time condition."""
import sys

depth = int(sys.argv[1])


def branch(name, level):
    if level == depth:
        body = 'node { output: "v%d" op_type: "Constant" attribute { name: "value" type: TENSOR t { dims: 1 data_type: 1 float_data: 1 } } }' % level
    else:
        inner = branch("b%d" % (level + 1), level + 1)
        other = 'g { name: "e%d" node { output: "w%d" op_type: "Constant" attribute { name: "value" type: TENSOR t { dims: 1 data_type: 1 float_data: 2 } } } output { name: "w%d" type { tensor_type { elem_type: 1 } } } }' % (level, level, level)
        body = ('node { input: "cond" output: "v%d" op_type: "If" attribute { name: "then_branch" type: GRAPH %s } '
                'attribute { name: "else_branch" type: GRAPH %s } }' % (level, inner, other))
    return 'g { name: "%s" %s output { name: "v%d" type { tensor_type { elem_type: 1 } } } }' % (name, body, level)


top = branch("b0", 0)[len("g { "):-2]
print('ir_version: 7\nopset_import { domain: "" version: 13 }\ngraph { %s input { name: "cond" type { tensor_type { elem_type: 9 shape { } } } } }' % top)
