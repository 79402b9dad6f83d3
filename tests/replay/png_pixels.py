#!/usr/bin/env python3
"""Reads a PNG (8-bit RGB or RGBA, non-interlaced) with the standard library and prints
'WIDTH HEIGHT NONWHITE COLOR_COUNT' and, for each #rrggbb argument, how many pixels have it."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and color in (2, 6), "unsupported PNG"
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = pixels(sys.argv[1])
    counts = {}
    for row in rows:
        for x in range(width):
            rgb = row[x * channels:x * channels + 3]
            counts[rgb] = counts.get(rgb, 0) + 1
    nonwhite = sum(n for rgb, n in counts.items() if min(rgb) < 235)
    out = [str(width), str(height), str(nonwhite), str(len(counts))]
    for want in sys.argv[2:]:
        out.append(str(counts.get(bytes.fromhex(want.lstrip("#")), 0)))
    print(" ".join(out))


main()
