#!/usr/bin/env python3
"""Writes the generated part of the fuzzing corpus, tests/fuzz/corpus/<reader>/: valid seeds of every format,
a few files of data/ cut short, the malformed inputs of tests/data/malformed, and the inputs that once made a
reader give a wrong answer (comments, byte-order marks, NaN and infinite weights, non-breaking spaces, empty
files, NUL bytes, trailing gzip data, unchecked binary names and flags). Not part of the build: run it again
after changing it (it rewrites only the files it generates; inputs added by hand, such as fuzzer findings, stay).
"""
import gzip
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
CORPUS = os.path.join(HERE, 'corpus')
BOM = b'\xef\xbb\xbf'
NBSP = '\u00a0'.encode()


def put(reader, name, data):
    os.makedirs(os.path.join(CORPUS, reader), exist_ok=True)
    with open(os.path.join(CORPUS, reader, name), 'wb') as f:
        f.write(data.encode() if isinstance(data, str) else data)


def head(path, nbytes):
    """The first nbytes of a file of data/ (decompressed), cut in the middle of a line."""
    opener = gzip.open if path.endswith('.gz') else open
    with opener(os.path.join(ROOT, 'data', path), 'rb') as f:
        return f.read(nbytes)


def gz(data):
    return gzip.compress(data.encode() if isinstance(data, str) else data, mtime=0)


# ---- hybla's binary format (io/binary.cpp): little-endian, 64-byte header, CSR arrays, names ----
TYPES = {'bool': (1, 1, '?'), 'int64': (5, 8, 'q'), 'uint8': (6, 1, 'B'), 'float': (10, 4, 'f'),
         'double': (11, 8, 'd')}


def binary(nrows, ncols, rows, vtype='double', undirected=False, ids=None, labels=None, raw_values=None,
           version=1, order=0x01020304):
    """rows: a list of [(column, value)] per row, stored as given (so unsorted columns can be written)."""
    tag, size, fmt = TYPES[vtype]
    offsets = [0]
    for r in rows:
        offsets.append(offsets[-1] + len(r))
    cols = [c for r in rows for c, _ in r]
    vals = raw_values if raw_values is not None else b''.join(struct.pack('<' + fmt, v) for r in rows for _, v in r)
    names_kind, names = 0, b''
    if ids is not None:
        names_kind, names = 1, struct.pack('<%dq' % len(ids), *ids)
    if labels is not None:
        names_kind = 2
        names = b''.join(struct.pack('<I', len(l)) + l for l in (x.encode() if isinstance(x, str) else x
                                                                  for x in labels))
    header = struct.pack('<8sIIIIQQQIIQ', b'HYBLACSR', version, order, tag, size, nrows, ncols, len(cols),
                         1 if undirected else 0, names_kind, len(names))
    assert len(header) == 64
    return header + struct.pack('<%dQ' % len(offsets), *offsets) + struct.pack('<%dI' % len(cols), *cols) + vals + names


def triangle(vtype='double', **kw):
    w = {'bool': True, 'int64': 2, 'uint8': 3, 'float': 0.5, 'double': 1.25}[vtype]
    return binary(3, 3, [[(1, w), (2, w)], [(0, w), (2, w)], [(0, w), (1, w)]], vtype, **kw)


def main():
    for reader in ('matrix_market', 'edge_list', 'abc', 'binary', 'gzip'):
        os.makedirs(os.path.join(CORPUS, reader), exist_ok=True)

    # The malformed inputs of the readers' own tests.
    malformed = os.path.join(ROOT, 'tests', 'data', 'malformed')
    prefixes = {'mm_': 'matrix_market', 'el_': 'edge_list', 'abc_': 'abc', 'bin_': 'binary'}
    for name in sorted(os.listdir(malformed)):
        for prefix, reader in prefixes.items():
            if name.startswith(prefix):
                shutil.copyfile(os.path.join(malformed, name), os.path.join(CORPUS, reader, 'malformed_' + name))

    # ---- Matrix Market ----
    mm = 'matrix_market'
    put(mm, 'valid_real_general.mtx', '%%MatrixMarket matrix coordinate real general\n% a comment\n3 4 4\n'
                                      '1 1 1.5\n1 4 -2e3\n2 2 .25\n3 1 7\n')
    put(mm, 'valid_integer_symmetric.mtx', '%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n'
                                           '2 1 5\n3 1 -7\n3 3 1\n')
    put(mm, 'valid_pattern_general.mtx', '%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n3 1\n')
    put(mm, 'valid_skew.mtx', '%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 4\n3 2 -1.5\n')
    put(mm, 'valid_array.mtx', '%%MatrixMarket matrix array real general\n2 3\n1\n0\n2.5\n0\n-1\n3\n')
    put(mm, 'valid_array_symmetric.mtx', '%%MatrixMarket matrix array integer symmetric\n2 2\n1\n2\n3\n')
    put(mm, 'valid_crlf.mtx', '%%MatrixMarket matrix coordinate real general\r\n2 2 2\r\n1 2 1\r\n2 1 1\r\n')
    put(mm, 'valid_bool_values.mtx', '%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 1\n2 2 0\n')
    put(mm, 'valid_empty_matrix.mtx', '%%MatrixMarket matrix coordinate real general\n0 0 0\n')
    put(mm, 'directed_for_undirected.mtx', '%%MatrixMarket matrix coordinate real general\n3 3 3\n'
                                           '1 2 1\n2 3 2\n1 3 3\n')
    put(mm, 'duplicates.mtx', '%%MatrixMarket matrix coordinate integer general\n2 2 4\n1 2 1\n1 2 2\n2 1 3\n1 2 4\n')
    put(mm, 'karate.mtx', head('karate/karate.mtx', 1 << 20))
    put(mm, 'dolphins_cut_short.mtx', head('dolphins/dolphins.mtx', 700))
    put(mm, 'ldbc_directed.mtx', head('ldbc_examples/lagraph_mtx/ldbc-directed-example.mtx', 1 << 20))
    put(mm, 'west0067_cut_short.mtx', head('west0067/west0067.mtx', 1500))
    real = '%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1\n2 3 {}\n1 3 1\n'
    for name, value in (('nan', 'nan'), ('inf', 'inf'), ('minus_inf', '-inf'), ('nan_payload', 'nan(0x1)'),
                        ('infinity', 'Infinity'), ('huge', '1e400'), ('denormal', '4e-320')):
        put(mm, 'value_%s.mtx' % name, real.format(value))
    put(mm, 'bom.mtx', BOM + b'%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1\n')
    put(mm, 'empty.mtx', b'')
    put(mm, 'comments_only.mtx', '%%MatrixMarket matrix coordinate real general\n% nothing\n%\n')
    put(mm, 'nul_bytes.mtx', b'\0' * 64)
    put(mm, 'nul_in_entry.mtx', b'%%MatrixMarket matrix coordinate real general\n2 2 1\n1\0 2 1\n')
    put(mm, 'index_20_digits.mtx', '%%MatrixMarket matrix coordinate real general\n2 2 1\n12345678901234567890 1 1\n')
    put(mm, 'size_2_pow_32.mtx', '%%MatrixMarket matrix coordinate pattern general\n4294967297 4294967297 1\n1 1\n')
    put(mm, 'nbsp_in_entry.mtx', b'%%MatrixMarket matrix coordinate real general\n2 2 1\n1' + NBSP + b'2 1\n')
    put(mm, 'gzipped.mtx', gz(real.format('2')))

    # ---- edge lists ----
    el = 'edge_list'
    put(el, 'valid_snap.txt', '# a comment\n% another\n0 1\n1 2\n\n2 0\n')
    put(el, 'valid_weighted.txt', head('ldbc_examples/example/example-directed.e', 1 << 20))
    put(el, 'valid_csv_header.csv', 'source,target,weight\n1,2,0.5\n2, 3 ,1e-3\n3 ,1,-2\n')
    put(el, 'valid_crlf.txt', '1\t2\r\n2\t3\r\n')
    put(el, 'valid_sparse_ids.txt', '0 9223372036854775807\n5 1000000000000\n')
    put(el, 'valid_duplicates.txt', '1 2 5\n2 1 7\n1 2 9\n1 1 3\n')
    put(el, 'p2p_gnutella_cut_short.txt', head('p2p-Gnutella08/p2p-Gnutella08.txt', 600))
    put(el, 'lastfm_cut_short.csv', head('lastfm_asia/lastfm_asia_edges.csv', 300))
    put(el, 'uspowergrid_cut_short.txt', head('USPowerGrid/USPowerGrid.txt', 400))
    put(el, 'nbsp_first_line.txt', b'1' + NBSP + b'2\n2 3\n1 3\n')
    weighted = '1 2 1\n2 3 {}\n1 3 1\n'
    for name, value in (('nan', 'nan'), ('inf', 'inf'), ('minus_inf', '-inf'), ('nan_payload', 'nan(0x1)'),
                        ('huge', '1e400')):
        put(el, 'weight_%s.txt' % name, weighted.format(value))
    put(el, 'bom.txt', BOM + b'1 2\n2 3\n')
    put(el, 'empty.txt', b'')
    put(el, 'comments_only.txt', '# nothing here\n% nor here\n\n')
    put(el, 'header_only.csv', 'node_1,node_2\n')
    put(el, 'two_headers.csv', 'from,to\nsource,target\n1,2\n')
    put(el, 'header_wrong_field_count.txt', 'a b c d\n1 2\n')
    put(el, 'nul_bytes.txt', b'\0' * 64)
    put(el, 'gzipped.txt', gz('1 2\n2 3\n3 1\n'))

    # ---- mcl labels ----
    abc = 'abc'
    put(abc, 'valid.abc', 'a b 1.5\nb c\nc\ta 2\n\nd a 0\n')
    put(abc, 'valid_crlf.abc', 'x y 1\r\ny z 2\r\n')
    put(abc, 'ppi_cut_short.abc', head('ppi_dip_yeast/ppi.dip.cleaned.txt', 500))
    put(abc, 'comment_words.abc', '# some words\na b 1\nb c 1\nc a 1\n')
    put(abc, 'comment_header.abc', '# from to weight\na b 1\n')
    put(abc, 'bom.abc', BOM + b'a b\nb c\nc a\n')
    for name, value in (('inf', 'inf'), ('nan', 'nan'), ('nan_payload', 'nan(0x1)'), ('minus_inf', '-inf')):
        put(abc, 'weight_%s.abc' % name, 'a b 1\nb c 1\nd e %s\n' % value)
    put(abc, 'nbsp_label.abc', b'a' + NBSP + b'b c\n')
    put(abc, 'empty.abc', b'')
    put(abc, 'comments_only.abc', '# nothing\n# here\n')
    put(abc, 'nul_bytes.abc', b'\0' * 64)
    put(abc, 'nul_label.abc', b'a\0 b 1\n')
    put(abc, 'gzipped.abc', gz('a b\nb c\n'))

    # ---- hybla binary ----
    b = 'binary'
    for vtype in TYPES:
        put(b, 'valid_%s.bin' % vtype, triangle(vtype, undirected=True))
    put(b, 'valid_ids.bin', triangle(ids=[3, 10, 42]))
    put(b, 'valid_labels.bin', triangle(labels=['a', 'b', 'c']))
    put(b, 'valid_rectangular.bin', binary(2, 3, [[(0, 1.0), (2, 2.0)], []]))
    put(b, 'valid_empty.bin', binary(0, 0, []))
    put(b, 'ids_duplicate.bin', triangle(ids=[3, 3, 4]))
    put(b, 'ids_negative.bin', triangle(ids=[-1, 0, 1]))
    put(b, 'ids_decreasing.bin', triangle(ids=[10, 5, 7]))
    put(b, 'label_empty.bin', triangle(labels=['a', '', 'c']))
    put(b, 'label_space.bin', triangle(labels=['a', 'b c', 'd']))
    put(b, 'label_newline.bin', triangle(labels=['a', 'b\nc', 'd']))
    put(b, 'label_duplicate.bin', triangle(labels=['a', 'a', 'c']))
    put(b, 'directed_flagged_undirected.bin', binary(3, 3, [[(1, 1.0)], [(2, 1.0)], []], undirected=True))
    put(b, 'bool_value_2.bin', triangle('bool', raw_values=b'\1\2\1\1\1\1'))
    put(b, 'columns_unsorted.bin', binary(2, 2, [[(1, 1.0), (0, 1.0)], []]))
    put(b, 'column_out_of_range.bin', binary(2, 2, [[(5, 1.0)], []]))
    put(b, 'truncated.bin', triangle()[:-5])
    put(b, 'trailing_bytes.bin', triangle() + b'\0')
    put(b, 'other_version.bin', triangle(version=2))
    put(b, 'other_byte_order.bin', triangle(order=0x04030201))
    put(b, 'gzipped.bin', gz(triangle(labels=['a', 'b', 'c'])))

    # ---- gzip streams (the bytes are the .gz file) ----
    g = 'gzip'
    text = '%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1\n2 3 2\n3 1 3\n'
    put(g, 'mtx.gz', gz(text))
    put(g, 'edge_list.gz', gz('1 2\n2 3\n3 1\n'))
    put(g, 'abc.gz', gz('a b 1\nb c 2\n'))
    put(g, 'binary.gz', gz(triangle()))
    put(g, 'garbage_appended.gz', gz('1 2\n2 3\n3 1\n') + b'garbage\n')
    put(g, 'zeros_appended.gz', gz('1 2\n2 3\n3 1\n') + b'\0' * 16)
    put(g, 'two_members.gz', gz('1 2\n2 3\n') + gz('3 1\n'))
    put(g, 'two_members_split_line.gz', gz('1 2\n2 ') + gz('3\n3 1\n'))
    put(g, 'member_then_magic.gz', gz('1 2\n') + b'\x1f\x8b')
    put(g, 'empty_member.gz', gz(b''))
    put(g, 'truncated.gz', gz(text)[:-6])
    bad_crc = bytearray(gz(text))
    bad_crc[-8] ^= 0xff
    put(g, 'bad_crc.gz', bytes(bad_crc))
    put(g, 'gzip_in_gzip.gz', gz(gz(text)))
    put(g, 'not_gzip.gz', text)


if __name__ == '__main__':
    main()
