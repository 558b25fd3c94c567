#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/: a few valid
and near-valid inputs each, in the input formats the targets' header comments describe.
Rerun after changing a format: python3 tests/fuzz/make_corpus.py (it replaces the seeds)."""
import gzip
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def clear(target):
    d = os.path.join(HERE, "corpus", target)
    if os.path.isdir(d):
        for n in os.listdir(d):
            os.remove(os.path.join(d, n))


# ---- fuzz_idx: flags, u16 length of each part but the last, the parts


def idx_images(n, rows, cols, magic=0x803, claim=None):
    hdr = struct.pack(">IIII", magic, n if claim is None else claim, rows, cols)
    return hdr + bytes((i * 37) % 256 for i in range(n * rows * cols))


def idx_labels(labels, magic=0x801, claim=None):
    return struct.pack(">II", magic, len(labels) if claim is None else claim) + bytes(labels)


def idx_input(flags, *parts, cut=None):
    out = bytes([flags])
    if cut is not None:
        out += bytes([cut])
    for p in parts[:-1]:
        out += struct.pack("<H", len(p)) + p
    return out + parts[-1]


def idx_corpus():
    t = "fuzz_idx"
    clear(t)
    im, lb = idx_images(3, 4, 4), idx_labels([0, 9, 3])
    write(t, "raw_valid", idx_input(0x00, im, lb))
    write(t, "gzip_valid", idx_input(0x0A, im, lb))  # both compressed here, .gz names
    write(t, "gz_fallback", idx_input(0x0F, im, lb))  # NAME.gz on disk, NAME passed
    write(t, "gz_given", idx_input(0x05, gzip.compress(im), gzip.compress(lb)))
    write(t, "gz_cut", idx_input(0x2A, im, lb, cut=20))
    write(t, "truncated", idx_input(0x00, im[:-7], lb))
    write(t, "claims_more", idx_input(0x00, idx_images(2, 4, 4, claim=1000000), lb))
    write(t, "swapped", idx_input(0x00, lb, im))
    write(t, "label_255", idx_input(0x00, im, idx_labels([0, 255, 1])))
    write(t, "count_mismatch", idx_input(0x00, im, idx_labels([1, 2])))
    write(t, "trailing_data", idx_input(0x00, im + b"xx", lb))
    write(t, "labels_missing", idx_input(0x40, im, lb))
    write(t, "zero_side", idx_input(0x00, idx_images(1, 0, 4), idx_labels([1])))
    test_im, test_lb = idx_images(2, 4, 4), idx_labels([1, 2])
    write(t, "dir_valid", idx_input(0x10, im, lb, test_im, test_lb))
    write(t, "dir_gzip", idx_input(0x1A, im, lb, test_im, test_lb))
    # the two splits disagree: a test label beyond the training classes, another image size
    write(t, "dir_test_label_200", idx_input(0x10, im, lb, test_im, idx_labels([1, 200])))
    write(t, "dir_test_size", idx_input(0x10, im, lb, idx_images(2, 5, 5), test_lb))
    write(t, "dir_train_labels_missing", idx_input(0x50, im, lb, test_im, test_lb))


# ---- fuzz_tokens: flags, context byte, the file's contents (see fuzz_tokens.c)

TOK_BIN, TOK_TXT, TOK_MAGIC, TOK_HEADER = range(4)
SHARES = {0.5: 0, 0.1: 1, 0.25: 2, 0.01: 3, 0.9: 4, 0.001: 5, 0.999: 6, 0.3: 7}


def tok_input(name, context, contents, share=0.1, scaled=False, missing=False, bad_args=False):
    flags = name | SHARES[share] << 2 | (0x20 if scaled else 0) | (0x40 if missing else 0) | (0x80 if bad_args else 0)
    return bytes([flags, context]) + contents


def u16s(tokens):
    return struct.pack("<%dH" % len(tokens), *tokens)


def llmc_file(tokens, version=1, count=None):
    hdr = struct.pack("<3i", 20240520, version, len(tokens) if count is None else count) + bytes(1012)
    return hdr + u16s(tokens)


def tokens_corpus():
    t = "fuzz_tokens"
    clear(t)
    stream = [(i * 7919 + 13) % 50257 for i in range(200)]
    text = b"It was the best of times, it was the worst of times, it was the age of wisdom.\n" * 3
    write(t, "llmc_header_here", tok_input(TOK_HEADER, 8, u16s(stream)))
    write(t, "llmc_valid", tok_input(TOK_BIN, 4, llmc_file(stream[:100]), share=0.5))
    write(t, "llmc_as_txt", tok_input(TOK_TXT, 4, llmc_file(stream[:100]), share=0.25))
    write(t, "llmc_version2", tok_input(TOK_BIN, 4, llmc_file(stream[:100], version=2)))
    write(t, "llmc_count_more", tok_input(TOK_BIN, 4, llmc_file(stream[:100], count=101)))
    write(t, "llmc_count_less", tok_input(TOK_BIN, 4, llmc_file(stream[:100], count=99)))
    write(t, "llmc_count_negative", tok_input(TOK_BIN, 4, llmc_file(stream[:100], count=-1)))
    write(t, "llmc_header_cut", tok_input(TOK_BIN, 4, llmc_file(stream[:100])[:600]))
    write(t, "magic_over_text", tok_input(TOK_MAGIC, 4, text))
    write(t, "nano_valid", tok_input(TOK_BIN, 8, u16s(stream)))
    write(t, "nano_top_token", tok_input(TOK_BIN, 8, u16s(stream[:50] + [65535] + stream[50:]), share=0.25))
    write(t, "nano_odd", tok_input(TOK_BIN, 2, u16s(stream[:20]) + b"\x01"))
    write(t, "text_valid", tok_input(TOK_TXT, 16, text, share=0.25))
    write(t, "text_context_1", tok_input(TOK_TXT, 1, b"abcd", share=0.5))
    write(t, "text_too_short", tok_input(TOK_TXT, 16, text[:20]))
    write(t, "text_share_small", tok_input(TOK_TXT, 2, text, share=0.001))
    write(t, "text_scaled_context", tok_input(TOK_TXT, 1, text * 8, share=0.5, scaled=True))
    write(t, "empty", tok_input(TOK_TXT, 4, b""))
    write(t, "missing", tok_input(TOK_BIN, 4, b"", missing=True))
    for i, what in enumerate(("context_0", "context_65537", "share_0", "share_1")):
        write(t, "bad_" + what, tok_input(TOK_TXT, i, text, bad_args=True))


# ---- fuzz_opts: selector byte, then NUL-separated strings


def opts_sel(mode, min_pos=0, max_pos=1, seen=False, help_=False):
    """The selector for mx_opts_parse (mode 0) with these positional bounds and flags."""
    for s in range(256):
        if (s % 5 == 0 and (s >> 3 & 1) == min_pos and (s >> 4 & 3) == max_pos
                and bool(s & 0x40) == seen and bool(s & 0x80) == help_):
            return s
    raise SystemExit("no selector for %r" % ((mode, min_pos, max_pos, seen, help_),))


def list_sel(kind, variant=0, maxsel=3):
    """Selector for the list parsers (kind 1 int, 2 double, 3 choice, 4 fraction)."""
    for s in range(256):
        if s % 5 == kind and (s >> 3) % 4 == variant and (s >> 5) == maxsel:
            return s
    for s in range(256):
        if s % 5 == kind:
            return s
    raise SystemExit("no selector")


def opts_corpus():
    t = "fuzz_opts"
    clear(t)
    args = lambda *a: b"\0".join(x.encode() for x in a)
    write(t, "all_types", bytes([opts_sel(0, 0, 1, seen=True)]) +
          args("--count", "10", "--neg=-3", "--wide", "-2147483648", "--rate", "0.5", "--any", "1e300",
               "--mode", "bb", "--path=x.h5", "--flag", "pos"))
    write(t, "help", bytes([opts_sel(0, help_=True)]) + args("--count", "2", "--help"))
    write(t, "out_of_range", bytes([opts_sel(0)]) + args("--count", "65537"))
    write(t, "overflow", bytes([opts_sel(0)]) + args("--wide", "2147483648"))
    write(t, "missing_value", bytes([opts_sel(0)]) + args("--rate"))
    write(t, "flag_value", bytes([opts_sel(0)]) + args("--flag=1"))
    write(t, "bad_choice", bytes([opts_sel(0)]) + args("--mode", "d"))
    write(t, "positional", bytes([opts_sel(0, 1, 2)]) + args("a", "--", "-b"))
    write(t, "missing_positional", bytes([opts_sel(0, 1, 1)]) + args("--flag"))
    write(t, "nan", bytes([opts_sel(0)]) + args("--any", "nan"))
    write(t, "int_list", bytes([list_sel(1, 1)]) + b"1,2,4,8")
    write(t, "int_list_stray_comma", bytes([list_sel(1, 1)]) + b"1,2,")
    write(t, "int_list_empty_item", bytes([list_sel(1, 0)]) + b"1,,2")
    write(t, "int_list_huge", bytes([list_sel(1, 2)]) + b"99999999999999999999")
    write(t, "int_list_too_many", bytes([list_sel(1, 3, 0)]) + b"1,2")
    write(t, "double_list", bytes([list_sel(2, 1)]) + b"0.05,0.1,1e-3")
    write(t, "double_list_inf", bytes([list_sel(2, 2)]) + b"1e400,2")
    write(t, "double_list_hex", bytes([list_sel(2, 0)]) + b"0x1p3,nan")
    write(t, "choice_list", bytes([list_sel(3, 0)]) + b"data,model,layer")
    write(t, "choice_list_bad", bytes([list_sel(3, 0)]) + b"data,,bogus")
    write(t, "choice_list_empty_choice", bytes([list_sel(3, 2)]) + b"x,,y")
    write(t, "fraction_percent", bytes([list_sel(4)]) + b"5%")
    write(t, "fraction", bytes([list_sel(4)]) + b"0.05")
    write(t, "fraction_bad", bytes([list_sel(4)]) + b"100%")


# ---- fuzz_results: selector, edit count, edits (see fuzz_results.c)

OP_ATTR, OP_DEL_ATTR, OP_DEL_LINK, OP_SOFT, OP_HARD, OP_GROUP, OP_DATASET, OP_EXTERNAL = range(8)
P_ROOT, P_RUNS, P_SUMMARY, P_RUN, P_SERIES, P_TOP = range(6)
ATTR = {"schema_version": 0, "status": 1, "gpus": 2, "batch": 3, "global_batch": 4, "workload": 5}
RUN = {"r0001": 0, "r0002": 1, "r0003": 2, "r0004": 3}
SERIES = {"step_time": 0, "phase_time": 1, "loss": 2, "test_acc": 3, "epoch_time": 4}
T_I32, T_I64BE, T_I8, T_U32, T_F64, T_F32BE, T_STR, T_VSTR, T_IDCOMP, T_COMP, T_ARRAY, T_OPAQUE = range(12)
S_NULL, S_SCALAR, S_RANK1, S_RANK2 = 0, 1, 4, 5


def path(kind, run="r0001", series=None):
    out = bytes([kind, RUN.get(run, 4)])
    if kind == P_SERIES:
        out += bytes([SERIES[series]])
    return out


def res_input(template, edits=(), report=None, compare=False):
    fmt = {"text": 0, "md": 1, "csv": 2, "json": 3}
    sel = template | (fmt[report] << 2 | 0x10 if report else 0) | (0x20 if compare else 0)
    return bytes([sel, len(edits)]) + b"".join(edits)


def attr(p, name, tkind, skind, data=b"", dims=b"", textra=b""):
    """Sets attribute name; textra: the type's own bytes (string size and padding), read
    before the dimensions."""
    return bytes([OP_ATTR]) + p + bytes([ATTR[name], tkind, skind]) + textra + dims + data


def results_corpus():
    t = "fuzz_results"
    clear(t)
    i32 = lambda v: struct.pack("<i", v)
    write(t, "three_runs_text", res_input(3, report="text"))
    write(t, "three_runs_json_compare", res_input(3, report="json", compare=True))
    write(t, "one_run_md", res_input(2, report="md"))
    write(t, "no_runs_csv", res_input(1, report="csv", compare=True))
    write(t, "from_scratch_schema", res_input(0, [attr(path(P_ROOT), "schema_version", T_I32, S_SCALAR, i32(1))]))
    write(t, "schema_too_new", res_input(1, [attr(path(P_ROOT), "schema_version", T_I32, S_SCALAR, i32(2))]))
    write(t, "schema_as_string", res_input(1, [attr(path(P_ROOT), "schema_version", T_STR, S_SCALAR,
                                                    b"1\0\0\0", textra=bytes([4, 0]))]))
    write(t, "status_int", res_input(2, [attr(path(P_RUN), "status", T_I32, S_SCALAR, i32(7))], report="text"))
    write(t, "status_deleted", res_input(2, [bytes([OP_DEL_ATTR]) + path(P_RUN) + bytes([ATTR["status"]])],
                                         report="text"))
    write(t, "gpus_negative", res_input(3, [attr(path(P_RUN, "r0002"), "gpus", T_I32, S_SCALAR, i32(-2))],
                                        report="json"))
    write(t, "gpus_array", res_input(2, [attr(path(P_RUN), "gpus", T_I32, S_RANK1, i32(1) * 3, dims=b"\x03")]))
    write(t, "status_string_array", res_input(2, [attr(path(P_RUN), "status", T_STR, S_RANK1,
                                                       b"ok".ljust(120, b"A"), dims=b"\x03", textra=bytes([40, 0]))]))
    write(t, "workload_vlen", res_input(2, [attr(path(P_RUN), "workload", T_VSTR, S_SCALAR, b"\x05mlp\xffz")],
                                        report="md"))
    write(t, "run_soft_link", res_input(3, [bytes([OP_SOFT]) + path(P_RUN, "r0003") + path(P_RUN, "r0001") + b"\x01"],
                                        report="text"))
    write(t, "run_dangling_link", res_input(2, [bytes([OP_SOFT]) + path(P_RUN) + path(P_RUN) + b"\x00"]))
    write(t, "run_hard_link", res_input(3, [bytes([OP_DEL_LINK]) + path(P_RUN, "r0003"),
                                            bytes([OP_HARD]) + path(P_RUN, "r0003") + path(P_RUN, "r0001")],
                                        report="csv"))
    write(t, "run_external_self", res_input(3, [bytes([OP_DEL_LINK]) + path(P_RUN, "r0002"),
                                                bytes([OP_EXTERNAL]) + path(P_RUN, "r0002") +
                                                path(P_RUN, "r0001") + b"\x01"], report="text"))
    write(t, "run_missing", res_input(3, [bytes([OP_DEL_LINK]) + path(P_RUN, "r0002")]))
    write(t, "runs_is_dataset", res_input(2, [bytes([OP_DATASET]) + path(P_RUNS) + bytes([T_F64, S_RANK1, 2]) +
                                              b"\0" * 16]))
    write(t, "summary_group", res_input(2, [bytes([OP_GROUP]) + path(P_SUMMARY)]))
    # /summary as a compound with an id column: rows naming r0002 and r0001
    write(t, "summary_ids", res_input(3, [bytes([OP_DATASET]) + path(P_SUMMARY) +
                                          bytes([T_IDCOMP, S_RANK1, 8, 0, 1, 2]) + b"\0" * 34 + b"\x01\x00"],
                                      report="text"))
    write(t, "summary_2d", res_input(2, [bytes([OP_DATASET]) + path(P_SUMMARY) + bytes([T_IDCOMP, S_RANK2, 8, 0, 1, 1, 1]) +
                                         b"\0" * 20]))
    write(t, "series_2d", res_input(2, [bytes([OP_DATASET]) + path(P_SERIES, series="step_time") +
                                        bytes([T_F64, S_RANK2, 2, 2]) + struct.pack("<4d", 1, 2, 3, 4)], report="text"))
    write(t, "series_int", res_input(2, [bytes([OP_DATASET]) + path(P_SERIES, series="loss") +
                                         bytes([T_I32, S_RANK1, 4]) + i32(1) * 4], report="json"))
    write(t, "series_nan", res_input(2, [bytes([OP_DATASET]) + path(P_SERIES, series="step_time") +
                                         bytes([T_F64, S_RANK1, 4]) + struct.pack("<4d", float("nan"), -1, 0, 1e308)],
                                     report="text", compare=True))
    write(t, "phase_short", res_input(2, [bytes([OP_DATASET]) + path(P_SERIES, series="phase_time") +
                                          bytes([T_F64, S_RANK2, 2, 5]) + b"\0" * 80], report="text"))
    write(t, "epoch_scalar", res_input(2, [bytes([OP_DATASET]) + path(P_SERIES, series="epoch_time") +
                                           bytes([T_F64, S_SCALAR]) + b"\0" * 8]))


if __name__ == "__main__":
    idx_corpus()
    tokens_corpus()
    opts_corpus()
    results_corpus()
    for t in ("fuzz_idx", "fuzz_tokens", "fuzz_opts", "fuzz_results"):
        d = os.path.join(HERE, "corpus", t)
        print("%s: %d seeds, %d bytes" % (t, len(os.listdir(d)), sum(os.path.getsize(os.path.join(d, n))
                                                                       for n in os.listdir(d))), file=sys.stderr)
