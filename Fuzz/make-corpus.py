#!/usr/bin/env python3
"""Regenerates the checked-in seed corpora under Fuzz/Corpus/.

    Fuzz/make-corpus.py [--deck PATH-TO-deck]

Needs a built `deck` (default: $DECK, else .build/release/deck or .build/debug/deck of the
repository), `sqlite3`, and Python 3.8+. Deterministic apart from what `deck` writes (dates in
deck_meta). Every seed is kept under 64 KiB. Existing seeds are replaced, other files in the
corpus directories are left alone. The fuzzers never write here (Scripts/fuzz works on a copy).
"""

import argparse
import gzip
import hashlib
import io
import json
import lzma
import bz2
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile

warnings.filterwarnings("ignore", "Duplicate name", UserWarning)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "Corpus")
LIMIT = 64 * 1024
MIMETYPE = b"application/vnd.deck.package"
FIXED_TIME = 1_795_000_000  # 2026-11-18, as the sample uses

written = {}


def put(target, name, data):
    """Writes one seed file, refusing anything over LIMIT."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > LIMIT:
        sys.exit(f"make-corpus: {target}/{name} is {len(data)} bytes, over {LIMIT}")
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)
    written.setdefault(target, []).append((name, len(data)))


def run(*args, **kwargs):
    return subprocess.run(args, check=True, capture_output=True, **kwargs)


# MARK: - FuzzManifest


def manifest_seeds():
    def pretty(obj):
        # The canonical form DeckKit writes: sorted keys, two-space indent, " : ", final newline.
        return json.dumps(obj, indent=2, sort_keys=True, separators=(",", " : ")) + "\n"

    valid = {
        "contentType": "org.deck.fuzz",
        "format": "org.deck.package",
        "formatVersion": 1,
        "generator": "DeckKit 0.1.0",
        "minimumReaderVersion": 1,
    }
    put("FuzzManifest", "valid.json", pretty(valid))
    put("FuzzManifest", "valid-compact.json", json.dumps(valid, separators=(",", ":")))
    put("FuzzManifest", "valid-bom.json", b"\xef\xbb\xbf" + pretty(valid).encode())
    put("FuzzManifest", "valid-utf16.json", pretty(valid).encode("utf-16"))
    variants = {
        "no-generator": {k: v for k, v in valid.items() if k != "generator"},
        "generator-null": {**valid, "generator": None},
        "version-2": {**valid, "formatVersion": 2},
        "too-new": {**valid, "formatVersion": 3, "minimumReaderVersion": 2},
        "min-reader-0": {**valid, "minimumReaderVersion": 0},
        "inconsistent-versions": {**valid, "formatVersion": 2, "minimumReaderVersion": 3},
        "version-0": {**valid, "formatVersion": 0},
        "version-negative": {**valid, "formatVersion": -1, "minimumReaderVersion": -5},
        "version-int64-max": {**valid, "formatVersion": 9223372036854775807},
        "version-int64-min": {**valid, "formatVersion": -9223372036854775808, "minimumReaderVersion": -9223372036854775808},
        "version-string": {**valid, "formatVersion": "1"},
        "version-float": {**valid, "formatVersion": 1.5},
        "wrong-format": {**valid, "format": "org.deck.other"},
        "content-type-mismatch": {**valid, "contentType": "org.deck.flashcards"},
        "content-type-space": {**valid, "contentType": "org.deck fuzz"},
        "content-type-empty": {**valid, "contentType": ""},
        "content-type-long": {**valid, "contentType": "x" * 300},
        "content-type-unicode": {**valid, "contentType": "org.d\u00e9ck.fuzz"},
        "content-type-nul": {**valid, "contentType": "org.deck.fuzz\u0000"},
        "missing-format": {k: v for k, v in valid.items() if k != "format"},
        "missing-content-type": {k: v for k, v in valid.items() if k != "contentType"},
        "extra-keys": {**valid, "extra": {"nested": [1, 2, 3]}, "store": "../../etc/passwd"},
        "generator-long": {**valid, "generator": "g" * 2000},
    }
    for name, obj in variants.items():
        put("FuzzManifest", name + ".json", pretty(obj))
    put("FuzzManifest", "version-huge.json", pretty(valid).replace('"formatVersion" : 1', '"formatVersion" : 1e400'))
    put("FuzzManifest", "duplicate-keys.json", pretty(valid)[:-2] + ',\n  "formatVersion" : 7\n}\n')
    put("FuzzManifest", "empty.json", b"")
    put("FuzzManifest", "null.json", "null")
    put("FuzzManifest", "array.json", "[]")
    put("FuzzManifest", "truncated.json", pretty(valid)[:60])
    put("FuzzManifest", "deep-nesting.json", '{"generator":' + "[" * 5000 + "]" * 5000 + "}")
    put("FuzzManifest", "invalid-utf8.json", pretty(valid).encode().replace(b"fuzz", b"f\xffzz"))


# MARK: - FuzzSchema


def schema_seeds():
    with open(os.path.join(REPO, "samples", "flashcards.schema.json"), "rb") as f:
        flashcards = f.read()
    put("FuzzSchema", "flashcards.schema.json", flashcards)
    fc = json.loads(flashcards)

    def variant(name, mutate):
        obj = json.loads(flashcards)
        mutate(obj)
        put("FuzzSchema", name + ".json", json.dumps(obj, indent=1, sort_keys=True))

    def ent(obj, name):
        return next(e for e in obj["entities"] if e["name"] == name)

    variant("flashcards-compact", lambda o: None)
    variant("flashcards-tiny-threshold", lambda o: ent(o, "Card")["attributes"][3].update(externalThreshold=1))
    variant("flashcards-threshold-0", lambda o: ent(o, "Card")["attributes"][3].update(externalThreshold=0))
    variant("flashcards-threshold-negative", lambda o: ent(o, "Card")["attributes"][3].update(externalThreshold=-1))
    variant("flashcards-deny", lambda o: ent(o, "Deck")["relationships"][0].update(deleteRule="deny"))
    variant("flashcards-noaction", lambda o: ent(o, "Deck")["relationships"][0].update(deleteRule="noAction"))
    variant("flashcards-no-inverse", lambda o: [r.pop("inverse") for e in o["entities"] for r in e["relationships"]])
    variant("flashcards-bad-inverse", lambda o: ent(o, "Card")["relationships"][0].update(inverse="tags"))
    variant("flashcards-unknown-destination", lambda o: ent(o, "Card")["relationships"][0].update(destination="Nope"))
    variant("flashcards-duplicate-entity", lambda o: o["entities"].append(json.loads(json.dumps(o["entities"][2]))))
    variant("flashcards-duplicate-attribute", lambda o: ent(o, "Tag")["attributes"].append({"name": "name", "type": "integer"}))
    variant("flashcards-unknown-type", lambda o: ent(o, "Tag")["attributes"][0].update(type="color"))
    variant("flashcards-unknown-option", lambda o: ent(o, "Tag")["attributes"][0].update(options=["unique", "sparkly"]))
    variant("flashcards-external-on-string", lambda o: ent(o, "Tag")["attributes"][0].update(options=["externalStorage"]))
    variant("flashcards-unique-constraints", lambda o: ent(o, "Card").update(uniqueConstraints=[["front", "back"]], indexes=[["creationDate"], ["front", "reviewCount"]]))
    variant("flashcards-bad-unique-constraint", lambda o: ent(o, "Card").update(uniqueConstraints=[["front", "nope"]], indexes=[[]]))
    variant("flashcards-renamed", lambda o: (ent(o, "Card").update(originalName="Flashcard"), ent(o, "Card")["attributes"][0].update(originalName="question")))
    variant("flashcards-subentity", lambda o: o["entities"].append({"name": "ImageCard", "superentity": "Card", "attributes": [{"name": "caption", "type": "string", "optional": True}]}))
    variant("flashcards-superentity-cycle", lambda o: (ent(o, "Deck").update(superentity="Tag"), ent(o, "Tag").update(superentity="Deck")))
    variant("flashcards-self-superentity", lambda o: ent(o, "Tag").update(superentity="Tag"))
    variant("flashcards-version-empty", lambda o: o.update(version=""))
    variant("flashcards-no-version", lambda o: o.pop("version"))
    variant("flashcards-no-entities", lambda o: o.update(entities=[]))
    variant("flashcards-reserved-names", lambda o: ent(o, "Tag")["attributes"].extend([{"name": "_pk", "type": "integer"}, {"name": "_entity", "type": "string"}]))
    variant("flashcards-sql-names", lambda o: ent(o, "Tag")["attributes"].extend([{"name": "select", "type": "string", "optional": True}, {"name": "a\"b", "type": "string", "optional": True}, {"name": "x'; DROP TABLE Card; --", "type": "string", "optional": True}]))
    variant("flashcards-unicode-names", lambda o: ent(o, "Tag")["attributes"].append({"name": "n\u00famero", "type": "integer", "optional": True}))
    variant("flashcards-empty-name", lambda o: ent(o, "Tag")["attributes"].append({"name": "", "type": "integer", "optional": True}))

    all_types = {
        "version": "2.3.4",
        "entities": [
            {
                "name": "Item",
                "originalName": "Thing",
                "attributes": [
                    {"name": "name", "type": "string", "default": "untitled", "options": ["unique", "indexed"]},
                    {"name": "count", "type": "integer", "default": 42},
                    {"name": "negative", "type": "integer", "optional": True, "default": -7},
                    {"name": "ratio", "type": "double", "default": 2.5},
                    {"name": "flag", "type": "bool", "default": True},
                    {"name": "created", "type": "date", "default": "2026-11-30T10:00:00Z"},
                    {"name": "stamp", "type": "date", "default": 1700000000.125},
                    {"name": "payload", "type": "data", "optional": True, "default": "AQID+g=="},
                    {"name": "image", "type": "data", "optional": True, "options": ["externalStorage"], "externalThreshold": 8, "originalName": "picture"},
                    {"name": "ident", "type": "uuid", "default": "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
                    {"name": "link", "type": "url", "optional": True, "default": "https://example.com/a?b=1&c=%20"},
                    {"name": "price", "type": "decimal", "default": "12.345"},
                    {"name": "cost", "type": "decimal", "default": 0.1},
                    {"name": "extra", "type": "json", "optional": True, "default": '{"a":[1,2,{"b":null}]}'},
                    {"name": "number", "type": "json", "optional": True, "default": 3.5},
                    {"name": "plain", "type": "string", "optional": True, "default": None},
                ],
                "relationships": [
                    {"name": "owner", "destination": "Person", "inverse": "items", "deleteRule": "nullify", "originalName": "holder"},
                    {"name": "related", "destination": "Item", "toMany": True, "deleteRule": "noAction"},
                ],
                "uniqueConstraints": [["name", "count"]],
                "indexes": [["ratio"], ["flag", "created"]],
            },
            {
                "name": "Person",
                "attributes": [{"name": "name", "type": "string"}],
                "relationships": [{"name": "items", "destination": "Item", "toMany": True, "inverse": "owner", "deleteRule": "deny"}],
            },
            {"name": "Employee", "superentity": "Person", "attributes": [{"name": "salary", "type": "decimal", "optional": True}]},
            {
                "name": "Manager",
                "superentity": "Employee",
                "relationships": [{"name": "reports", "destination": "Employee", "toMany": True, "deleteRule": "cascade"}],
            },
        ],
    }
    put("FuzzSchema", "all-types.json", json.dumps(all_types, indent=1))
    put("FuzzSchema", "minimal.json", '{"version":"1","entities":[{"name":"A"}]}')
    put("FuzzSchema", "minimal-no-version.json", '{"entities":[{"name":"A"}]}')
    put("FuzzSchema", "one-attribute.json", '{"version":"1","entities":[{"name":"A","attributes":[{"name":"x","type":"string"}]}]}')
    put("FuzzSchema", "self-relationship.json", json.dumps({"version": "1.0.0", "entities": [{"name": "Node", "attributes": [{"name": "label", "type": "string", "optional": True}], "relationships": [{"name": "parent", "destination": "Node", "inverse": "children"}, {"name": "children", "destination": "Node", "toMany": True, "inverse": "parent", "deleteRule": "cascade"}]}]}))
    put("FuzzSchema", "own-inverse.json", json.dumps({"version": "1.0.0", "entities": [{"name": "Node", "relationships": [{"name": "peer", "destination": "Node", "inverse": "peer"}]}]}))
    put("FuzzSchema", "many-to-many.json", json.dumps({"version": "1.0.0", "entities": [{"name": "A", "relationships": [{"name": "bs", "destination": "B", "toMany": True, "inverse": "as"}]}, {"name": "B", "relationships": [{"name": "as", "destination": "A", "toMany": True, "inverse": "bs"}]}]}))
    put("FuzzSchema", "one-to-one.json", json.dumps({"version": "1.0.0", "entities": [{"name": "A", "relationships": [{"name": "b", "destination": "B", "inverse": "a", "deleteRule": "cascade"}]}, {"name": "B", "relationships": [{"name": "a", "destination": "A", "inverse": "b", "deleteRule": "deny"}]}]}))
    put("FuzzSchema", "deep-inheritance.json", json.dumps({"version": "1.0.0", "entities": [{"name": f"E{i}", **({"superentity": f"E{i-1}"} if i else {}), "attributes": [{"name": f"a{i}", "type": "integer", "default": i}]} for i in range(12)]}))
    put("FuzzSchema", "bad-defaults.json", json.dumps({"version": "1.0.0", "entities": [{"name": "A", "attributes": [
        {"name": "i", "type": "integer", "default": 1.5},
        {"name": "b", "type": "bool", "default": "maybe"},
        {"name": "u", "type": "uuid", "default": "not-a-uuid"},
        {"name": "d", "type": "date", "default": "yesterday"},
        {"name": "x", "type": "data", "default": "!!!"},
        {"name": "l", "type": "url", "default": "no scheme"},
        {"name": "m", "type": "decimal", "default": "1e999999"}]}]}))
    put("FuzzSchema", "extreme-numbers.json", json.dumps({"version": "1.0.0", "entities": [{"name": "A", "attributes": [
        {"name": "i", "type": "integer", "default": 9223372036854775807},
        {"name": "j", "type": "integer", "default": -9223372036854775808},
        {"name": "d", "type": "double", "default": 1.7976931348623157e308},
        {"name": "t", "type": "date", "default": -62135596800},
        {"name": "m", "type": "decimal", "default": "-0.000000000000000000000000000000000001"},
        {"name": "z", "type": "data", "options": ["externalStorage"], "externalThreshold": 9223372036854775807}]}]}))
    put("FuzzSchema", "many-entities.json", json.dumps({"version": "1.0.0", "entities": [{"name": f"T{i}", "attributes": [{"name": "v", "type": "string", "options": ["unique"]}]} for i in range(60)]}))
    put("FuzzSchema", "empty.json", b"")
    put("FuzzSchema", "not-object.json", "[1,2,3]")
    put("FuzzSchema", "deep-nesting.json", '{"version":"1","entities":' + "[" * 3000 + "]" * 3000 + "}")
    put("FuzzSchema", "truncated.json", flashcards[:300])


# MARK: - FuzzWhere

WHERE = [
    "front contains 'el' and image is not null",
    "deck.title = 'Spanish basics'",
    "title begins-with French",
    "front = hola",
    "front == 'hola' or back = \"hello\"",
    "reviewCount >= 0 && reviewCount < 10",
    "reviewCount in (0, 1, 2)",
    "reviewCount in ()",
    "front in ('hola', \"adi\u00f3s\", gracias)",
    "image is null",
    "image is not null",
    "not image is null",
    "!(front = hola)",
    "not not not front = x",
    "(front = hola || front = adi\u00f3s) && back != 'goodbye'",
    "front contains[c] HOLA",
    "front ends-with[C] 'A'",
    "back endswith 'o'",
    "back beginswith[c] T",
    "creationDate <= 2026-11-30",
    "creationDate > 2026-11-18T10:00:00Z",
    "creationDate = 1795000000",
    "deck = #1",
    "deck = #0 or deck is null",
    "deck.title contains basics and deck.created < 2030-01-01",
    "deck.cards is null",
    "tags is null",
    "tags is not null",
    "tags = #1",
    "cards is not null",
    "name in ('noun', 'animal')",
    "`front` = hola",
    "deck.`title` = 'Spanish basics'",
    "`in` = 3",
    "front <> ''",
    "front contains ''",
    "reviewCount = -1",
    "reviewCount = +3",
    "reviewCount = 9223372036854775807",
    "reviewCount = 9223372036854775808",
    "reviewCount < -.5",
    "reviewCount < 1e-3",
    "reviewCount = 1e308",
    "reviewCount = true",
    "front = null",
    "front != null",
    "front = 'it\\'s' or back = \"say \\\"hi\\\"\" or back = 'a\\nb\\tc\\\\'",
    "front=hola&&reviewCount>-5",
    "  front\t>\n'a'  ",
    "a = 1 or b = 2 and c = 3",
    "front contains 5",
    "front >",
    "(front = hola",
    "front = hola)",
    "front is",
    "front is not",
    "front in (1,",
    "front contains[x] a",
    "front = 'unterminated",
    "front = #",
    "front = #-1",
    "deck..title = x",
    "deck.title.length = 3",
    ".front = x",
    "front. = x",
    "image = 'AAAA'",
    "image contains 'a'",
    "deck contains x",
    "tags.name = noun",
    "deck.cards.front = x",
    "creationDate = 'not a date'",
    "id = 1",
    "_pk = 1",
    "_entity = Card",
    "Card.front = x",
    "front = \u00e9\u00e8",
    "front = '\U0001F600'",
    "(" * 99 + "front = x" + ")" * 99,
    "(" * 101 + "front = x" + ")" * 101,
    "not " * 120 + "front = x",
    " and ".join(f"reviewCount != {i}" for i in range(200)),
    " or ".join(f"front = w{i}" for i in range(200)),
    "front:desc",
    "deck.title:asc",
    "creationDate:DESC",
    "front",
    "in:asc",
    "front:sideways",
    "front contains el\nback:desc",
    "deck.title = 'Spanish basics'\nfront:asc",
    "reviewCount >= 0\ndeck.title:desc",
    "",
]


def where_seeds():
    for index, text in enumerate(WHERE):
        put("FuzzWhere", f"where-{index:03d}", text)


# MARK: - Packages, FuzzStore and FuzzArchive


def make_packages(deck, scratch):
    """The sample package and a tiny flash-cards package with small external blobs."""
    sample = os.path.join(scratch, "Sample.flashcards")
    run(deck, "new", sample, "--sample", "flashcards")
    schema = json.loads(open(os.path.join(REPO, "samples", "flashcards.schema.json")).read())
    card = next(e for e in schema["entities"] if e["name"] == "Card")
    next(a for a in card["attributes"] if a["name"] == "image")["externalThreshold"] = 16
    schema_path = os.path.join(scratch, "tiny.schema.json")
    with open(schema_path, "w") as f:
        json.dump(schema, f)
    tiny = os.path.join(scratch, "Tiny.flashcards")
    run(deck, "new", tiny, "--schema", schema_path, "--type", "org.deck.flashcards")
    image = os.path.join(scratch, "image.bin")
    with open(image, "wb") as f:
        f.write(bytes(range(64)) * 2)
    run(deck, "insert", tiny, "Deck", "title=Basics", "created=2026-11-30")
    run(deck, "insert", tiny, "Tag", "name=noun")
    run(deck, "insert", tiny, "Card", "front=hola", "back=hello", "creationDate=2026-11-30", "deck=#1", f"image=@{image}")
    run(deck, "insert", tiny, "Card", "front=gato", "back=cat", "creationDate=2026-11-30", "deck=#1")
    # Small pages make a small store: mutations hit the structure, not padding.
    for package in (sample, tiny):
        for leftover in ("lock", "tmp"):
            path = os.path.join(package, leftover)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.unlink(path)
    small = os.path.join(scratch, "Tiny512.flashcards")
    shutil.copytree(tiny, small)
    vacuum(os.path.join(small, "store.sqlite"), 512)
    return sample, tiny, small


def vacuum(path, page_size):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute(f"PRAGMA page_size={page_size}")
    db.execute("VACUUM")
    db.close()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def store_seeds(deck, sample, tiny, small, scratch):
    # The sample at its own page size is over LIMIT since format version 5 (its bookkeeping
    # tables); sample-format1.sqlite, the sample of format version 1, is kept as it was (not regenerated).
    for page in (512, 1024):
        copy = os.path.join(scratch, f"sample-{page}.sqlite")
        shutil.copy(os.path.join(sample, "store.sqlite"), copy)
        vacuum(copy, page)
        put("FuzzStore", f"sample-page{page}.sqlite", read(copy))
    put("FuzzStore", "tiny-page512.sqlite", read(os.path.join(small, "store.sqlite")))
    # A version 5 sample edited after its creation (versions in deck_rows, deck_cells and
    # deck_links): the schema of the fuzzer's template, so that merging it (as another copy, and
    # as the common ancestor) gets past the checks into the merge itself.
    edited = os.path.join(scratch, "Edited.flashcards")
    shutil.copytree(sample, edited)
    run(deck, "update", edited, "Card", "back=edited", "--where", "front == 'hola'")
    run(deck, "delete", edited, "Card", "--where", "front == 'adiós'")
    run(deck, "insert", edited, "Card", "front=nuevo", "back=new", "creationDate=2026-11-30", "deck=#1")
    copy = os.path.join(scratch, "edited-512.sqlite")
    shutil.copy(os.path.join(edited, "store.sqlite"), copy)
    vacuum(copy, 512)
    put("FuzzStore", "merge-edited-v5.sqlite", read(copy))

    def variant(name, *sql, page=512, base=None):
        path = os.path.join(scratch, name + ".sqlite")
        shutil.copy(base or os.path.join(small, "store.sqlite"), path)
        db = sqlite3.connect(path, isolation_level=None)
        # Near-misses on purpose: what the store's own constraints would refuse.
        db.execute("PRAGMA ignore_check_constraints=ON")
        db.execute("PRAGMA foreign_keys=OFF")
        for statement in sql:
            db.execute(statement)
        db.close()
        put("FuzzStore", name + ".sqlite", read(path))

    sample512 = os.path.join(scratch, "sample-512.sqlite")
    variant("wrong-application-id", "PRAGMA application_id=1")
    variant("user-version-2", "PRAGMA user_version=2")
    variant("content-type-mismatch", "UPDATE deck_meta SET value='org.deck.other' WHERE key='content_type'")
    variant("no-schema", "DELETE FROM deck_meta WHERE key='schema'")
    variant("schema-not-json", "UPDATE deck_meta SET value='{not json' WHERE key='schema'")
    variant("schema-empty-entities", "UPDATE deck_meta SET value='{\"entities\":[],\"version\":\"1\"}' WHERE key='schema'")
    variant("schema-extra-entity", "UPDATE deck_meta SET value=replace(value, '\"version\"', '\"zz\":1,\"version\"') WHERE key='schema'")
    variant("schema-invalid-inverse", "UPDATE deck_meta SET value=replace(value, '\"inverse\":\"deck\"', '\"inverse\":\"front\"') WHERE key='schema'")
    variant("schema-superentity-cycle", "UPDATE deck_meta SET value=replace(value, '\"name\":\"Tag\"', '\"name\":\"Tag\",\"superentity\":\"Tag\"') WHERE key='schema'")
    variant("schema-type-changed", "UPDATE deck_meta SET value=replace(value, '\"type\":\"string\"', '\"type\":\"integer\"') WHERE key='schema'")
    variant("schema-data-type-external", "UPDATE deck_meta SET value=replace(value, '\"name\":\"back\",\"type\":\"string\"', '\"name\":\"back\",\"options\":[\"externalStorage\"],\"type\":\"data\"') WHERE key='schema'")
    variant("dropped-table", "DROP TABLE Tag")
    variant("dropped-join-table", 'DROP TABLE "Card.tags"')
    variant("extra-table", "CREATE TABLE extra(x)")
    variant("extra-column", "ALTER TABLE Card ADD COLUMN extra TEXT")
    variant("unknown-entity-row", "UPDATE Card SET _entity='Nope' WHERE _pk=1")
    variant("dangling-reference", "PRAGMA foreign_keys=OFF", "UPDATE Card SET deck=99")
    variant("blob-row-missing", "DELETE FROM deck_blob")
    variant("blob-refs-wrong", "UPDATE deck_blob SET refs=refs+5")
    variant("blob-size-wrong", "UPDATE deck_blob SET size=size*1000")
    variant("blob-digest-malformed", "UPDATE Card SET image='not-a-digest' WHERE typeof(image)='text'")
    variant("blob-digest-missing-file", "UPDATE Card SET image='" + "ab" * 32 + "' WHERE typeof(image)='text'",
            "UPDATE deck_blob SET digest='" + "ab" * 32 + "'")
    variant("values-extreme", "UPDATE Card SET creationDate=-1e308, reviewCount=-9223372036854775808, front=char(0, 65535)")
    variant("sample-blobs-missing-rows", "DELETE FROM deck_blob WHERE substr(digest, 1, 1) < '8'", base=sample512)
    variant("sample-image-swapped", "UPDATE Card SET image=(SELECT image FROM Card c2 WHERE typeof(c2.image)='text' ORDER BY _pk DESC LIMIT 1) WHERE typeof(image)='text'", base=sample512)
    variant("wal-mode", "PRAGMA journal_mode=WAL")
    variant("freelist", "CREATE TABLE junk(x)", "INSERT INTO junk VALUES (randomblob(4000))", "DROP TABLE junk")
    broken = bytearray(read(os.path.join(small, "store.sqlite")))
    broken[600:640] = b"\xff" * 40
    put("FuzzStore", "damaged-page.sqlite", bytes(broken))
    put("FuzzStore", "truncated.sqlite", read(os.path.join(small, "store.sqlite"))[:3000])
    put("FuzzStore", "header-only.sqlite", read(os.path.join(small, "store.sqlite"))[:100])
    put("FuzzStore", "empty.sqlite", b"")
    put("FuzzStore", "not-sqlite.sqlite", b"SQLite format 2\x00" + b"\x00" * 84)


# MARK: - FuzzArchive


def tar_bytes(entries, fmt=tarfile.PAX_FORMAT, compression=None):
    """entries: list of (TarInfo, data or None)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for info, data in entries:
            info.mtime = FIXED_TIME
            info.uname = info.gname = ""
            if data is not None and info.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and info.size == 0:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
        end = tar.offset
    # The end-of-archive blocks, without tarfile's padding to a 10 KiB record.
    raw = buffer.getvalue()[: end + 1024]
    if compression == "gz":
        return gzip.compress(raw, mtime=0)
    if compression == "xz":
        return lzma.compress(raw)
    if compression == "bz2":
        return bz2.compress(raw)
    return raw


def tar_raw(entries):
    """Ustar headers and data of `entries`, without the end-of-archive blocks."""
    out = b""
    for info, data in entries:
        info.mtime = FIXED_TIME
        out += info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape")
        if data:
            out += data + b"\x00" * (-len(data) % 512)
    return out


def regular(name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    return (info, data)


def special(name, kind, target="", mode=0o644, major=0, minor=0):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    info.mode = mode
    info.devmajor, info.devminor = major, minor
    return (info, None)


def directory(name, mode=0o755):
    return special(name, tarfile.DIRTYPE, mode=mode)


def package_files(package):
    """[(archive path, bytes)] in the order DeckKit archives them."""
    files = [("mimetype", MIMETYPE), ("manifest.json", read(os.path.join(package, "manifest.json"))),
             ("store.sqlite", read(os.path.join(package, "store.sqlite")))]
    blobs = []
    for root, _, names in os.walk(os.path.join(package, "blobs")):
        for name in names:
            full = os.path.join(root, name)
            blobs.append((os.path.relpath(full, package), read(full)))
    return files + sorted(blobs)


def zip_bytes(entries, compression=zipfile.ZIP_DEFLATED, force_zip64=False):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data, *rest in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 11, 18, 0, 0, 0))
            info.compress_type = rest[0] if rest else (zipfile.ZIP_STORED if name == "mimetype" else compression)
            info.external_attr = (rest[1] if len(rest) > 1 else 0o100644) << 16
            if force_zip64:
                with z.open(info, "w", force_zip64=True) as f:
                    f.write(data)
            else:
                z.writestr(info, data)
    return buffer.getvalue()


def archive_seeds(deck, small, scratch):
    # Made by deck itself: export (a snapshot) and pack, in every format.
    for fmt, ext in (("zip", "zip"), ("tar", "tar"), ("tar.gz", "tar.gz"), ("tar.zst", "tar.zst")):
        out = os.path.join(scratch, f"pack.{ext}")
        run(deck, "pack", small, "--output", out, "--format", fmt)
        put("FuzzArchive", f"deck-pack.{ext}", read(out))
    out = os.path.join(scratch, "export.zip")
    run(deck, "export", small, "--output", out)
    put("FuzzArchive", "deck-export.zip", read(out))
    # Other tools' archives of the same package: a top-level folder, platform junk.
    folder = os.path.join(scratch, "Folder", "Vocab.flashcards")
    shutil.copytree(small, folder)
    run("bsdtar", "-cf", os.path.join(scratch, "folder.tar"), "-C", os.path.dirname(folder), "Vocab.flashcards")
    put("FuzzArchive", "bsdtar-folder.tar", read(os.path.join(scratch, "folder.tar")))
    run("zip", "-qrX", os.path.join(scratch, "folder.zip"), "Vocab.flashcards", cwd=os.path.dirname(folder))
    put("FuzzArchive", "zip-folder.zip", read(os.path.join(scratch, "folder.zip")))

    files = package_files(small)
    manifest = dict(files)["manifest.json"]
    store = dict(files)["store.sqlite"]
    blob_name, blob_data = next((n, d) for n, d in files if n.startswith("blobs/"))
    base = [regular(n, d) for n, d in files]

    def tar(name, entries, **kwargs):
        put("FuzzArchive", name, tar_bytes(entries, **kwargs))

    def z(name, entries, **kwargs):
        put("FuzzArchive", name, zip_bytes(entries, **kwargs))

    tar("python-valid.tar", base)
    tar("python-valid-gnu.tar", base, fmt=tarfile.GNU_FORMAT)
    tar("python-valid-ustar.tar", base, fmt=tarfile.USTAR_FORMAT)
    tar("python-valid.tar.xz", base, compression="xz")
    tar("python-valid.tar.bz2", base, compression="bz2")
    z("python-valid.zip", files)
    z("python-valid-bzip2.zip", files, compression=zipfile.ZIP_BZIP2)
    z("python-valid-lzma.zip", files, compression=zipfile.ZIP_LZMA)
    z("python-valid-zip64.zip", files, force_zip64=True)
    z("python-no-mimetype.zip", files[1:])
    tar("junk-entries.tar", [directory("__MACOSX/"), regular("__MACOSX/._manifest.json", b"\x00\x05\x16\x07"),
                             regular(".DS_Store", b"Bud1"), regular("blobs/._x", b"junk")] + base)
    tar("folder-and-junk.tar", [directory("Vocab.flashcards/")] + [regular("Vocab.flashcards/" + n, d) for n, d in files]
        + [regular("__MACOSX/Vocab.flashcards/._store.sqlite", b"x")])

    # Hostile: paths.
    tar("traversal-parent.tar", base + [regular("../evil", b"x")])
    tar("traversal-canary.tar", base + [regular("../../canary/evil", b"x")])
    tar("traversal-deep.tar", base + [regular("../" * 12 + "evil", b"x")])
    tar("traversal-inner.tar", base + [regular("blobs/../../evil", b"x")])
    tar("traversal-folder.tar", [regular("Vocab.flashcards/" + n, d) for n, d in files] + [regular("Vocab.flashcards/../evil", b"x")])
    tar("absolute.tar", base + [regular("/tmp/deck-fuzz-absolute-evil", b"x")])
    tar("dot-entries.tar", [regular("./" + n, d) for n, d in files] + [directory("./"), directory(".")])
    tar("double-slash.tar", [regular(n.replace("/", "//"), d) for n, d in files])
    tar("empty-name.tar", base + [regular("", b"x")])
    tar("long-name.tar", base + [regular("blobs/" + "a" * 5000, b"x")])
    tar("non-utf8-name.tar", base + [regular("blobs/\udcff\udcfe", b"x")], fmt=tarfile.GNU_FORMAT)
    tar("backslash.tar", base + [regular("..\\evil", b"x")])
    z("zip-traversal.zip", files + [("../evil", b"x"), ("../../canary/evil", b"x")])
    z("zip-absolute.zip", files + [("/tmp/deck-fuzz-absolute-evil", b"x")])
    z("zip-backslash.zip", files + [("..\\..\\evil", b"x"), ("blobs\\ab\\cd", b"y")])
    # Hostile: links and special files.
    tar("symlink-blobs.tar", base[:3] + [special("blobs", tarfile.SYMTYPE, "../../canary"), regular(blob_name, blob_data)])
    tar("symlink-store.tar", base[:2] + [special("store.sqlite", tarfile.SYMTYPE, "/etc/passwd")] + base[3:])
    tar("symlink-fanout.tar", base[:3] + [directory("blobs/"), special(os.path.dirname(blob_name), tarfile.SYMTYPE, "../../canary"), regular(blob_name, blob_data)])
    tar("symlink-then-file.tar", base + [special("link", tarfile.SYMTYPE, ".."), regular("link/evil", b"x")])
    tar("hardlink-store.tar", base[:2] + [special("store.sqlite", tarfile.LNKTYPE, "manifest.json")] + base[3:])
    tar("hardlink-outside.tar", base + [special("blobs/ab/" + "ab" * 32, tarfile.LNKTYPE, "/etc/passwd")])
    tar("char-device.tar", base + [special("blobs/null", tarfile.CHRTYPE, major=1, minor=3)])
    tar("block-device.tar", base[:2] + [special("store.sqlite", tarfile.BLKTYPE, major=7, minor=0)] + base[3:])
    tar("fifo.tar", base + [special("blobs/fifo", tarfile.FIFOTYPE)])
    z("zip-symlink.zip", files[:3] + [("blobs", b"../../canary", zipfile.ZIP_STORED, 0o120777), (blob_name, blob_data)])
    # Hostile: duplicates, wrong content, wrong layout.
    tar("duplicate-manifest.tar", base + [regular("manifest.json", manifest.replace(b"flashcards", b"other"))])
    tar("duplicate-blob.tar", base + [regular(blob_name, blob_data)])
    tar("duplicate-dir-file.tar", base + [regular("blobs", b"x")])
    z("zip-duplicate-store.zip", files + [("store.sqlite", b"not a database")])
    wrong = bytearray(blob_data)
    wrong[0] ^= 1
    tar("blob-wrong-digest.tar", base[:3] + [regular(blob_name, bytes(wrong))])
    tar("blob-bad-name.tar", base + [regular("blobs/ab/not-a-digest", b"x")])
    tar("blob-wrong-fanout.tar", base[:3] + [regular("blobs/00/" + os.path.basename(blob_name), blob_data)])
    tar("blob-no-fanout.tar", base[:3] + [regular("blobs/" + os.path.basename(blob_name), blob_data)])
    tar("blob-too-deep.tar", base[:3] + [regular(blob_name + "/x", blob_data)])
    tar("unknown-file.tar", base + [regular("notes.txt", b"hello")])
    tar("wal-file.tar", base + [regular("store.sqlite-wal", b"\x37\x7f\x06\x82" + b"\x00" * 28)])
    tar("lock-and-tmp.tar", base + [regular("lock", b"12345"), directory("tmp/"), regular("tmp/x", b"x")])
    tar("manifest-dir.tar", [base[0], directory("manifest.json/")] + base[2:])
    tar("no-store.tar", base[:2] + base[3:])
    tar("no-manifest.tar", base[:1] + base[2:])
    tar("mimetype-wrong.tar", [regular("mimetype", b"application/zip")] + base[1:])
    tar("mimetype-last.tar", base[1:] + base[:1])
    # The second folder without its store: two whole stores are over LIMIT since format version 5.
    tar("two-folders.tar", [regular("A.deck/" + n, d) for n, d in files]
        + [regular("B.deck/" + n, d) for n, d in files if n != "store.sqlite"])
    tar("modes.tar", [directory("blobs/", mode=0), regular("manifest.json", manifest, mode=0o4777)] + base[2:])
    tar("huge-manifest.tar", base[:1] + [regular("manifest.json", b" " * 24000)] + base[2:])
    tar("empty.tar", [])
    put("FuzzArchive", "empty.zip", zip_bytes([]))
    put("FuzzArchive", "empty-file", b"")
    # Hostile: sizes and compression.
    header = bytearray(tar_raw([regular("store.sqlite", b"x" * 100)])[:512])
    header[124:136] = b"77777777777\x00"  # declared size 8 GiB
    header[148:156] = b"        "
    header[148:156] = ("%06o\x00 " % sum(header)).encode()
    put("FuzzArchive", "declared-size-huge.tar", tar_raw(base[:2]) + bytes(header) + b"x" * 100)
    pax = tarfile.TarInfo("store.sqlite")
    pax.size = 10
    pax.pax_headers = {"size": "999999999999999"}
    tar("pax-size.tar", base[:2] + [(pax, b"0123456789")])
    raw_tar = tar_bytes(base)
    put("FuzzArchive", "truncated.tar", raw_tar[: len(raw_tar) // 2])
    put("FuzzArchive", "truncated.zip", zip_bytes(files)[:-30])
    zeros = b"\x00" * (48 << 20)
    z("bomb-store.zip", [files[0], files[1], ("store.sqlite", zeros)])
    put("FuzzArchive", "bomb-store.tar.gz", gzip.compress(tar_bytes(base[:2] + [regular("store.sqlite", zeros)]), compresslevel=9, mtime=0))
    encrypted = bytearray(zip_bytes(files))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (start := encrypted.find(signature, start)) >= 0:
            encrypted[start + offset] |= 1
            start += 4
    put("FuzzArchive", "zip-encrypted-flag.zip", bytes(encrypted))
    tar("many-entries.tar", base + [directory(f"d{i}/") for i in range(40)])


# MARK: - FuzzModelCache


def model_cache_seeds(into):
    """The real stores' model caches (../shared/fixtures/coredata beside the repository, or
    $DECK_COREDATA_FIXTURES), inflated (the archive) and, for one, as stored (raw DEFLATE), with
    a few near misses, written into the directory `into`: Scripts/fuzz adds them to a run's
    working corpus. They are never checked in (the fixtures stay out of the repository); the
    checked-in seeds of FuzzModelCache are synthetic. Skipped with a note when the folder is
    absent."""
    import zlib

    fixtures = os.environ.get("DECK_COREDATA_FIXTURES") or os.path.join(REPO, "..", "shared", "fixtures", "coredata")
    if not os.path.isdir(fixtures):
        print(f"make-corpus: {fixtures} is absent; no real model caches added", file=sys.stderr)
        return
    count = 0

    def write(name, data):
        nonlocal count
        with open(os.path.join(into, name), "wb") as f:
            f.write(data)
        count += 1

    for folder in sorted(os.listdir(fixtures)):
        directory = os.path.join(fixtures, folder)
        stores = [n for n in sorted(os.listdir(directory)) if n.endswith(".sqlite")] if os.path.isdir(directory) else []
        if not stores:
            continue
        uri = "file:" + os.path.join(directory, stores[0]) + "?mode=ro&immutable=1"
        with sqlite3.connect(uri, uri=True) as db:
            (content,) = db.execute("SELECT Z_CONTENT FROM Z_MODELCACHE").fetchone()
        archive = zlib.decompress(content, -15)
        write(f"real-{folder}.bplist", archive)
        if folder == "migration-v3":
            write(f"real-{folder}.deflate", content)
            write(f"real-{folder}-truncated.bplist", archive[: len(archive) // 2])
            write(f"real-{folder}-trailer-wide.bplist", archive[:-26] + b"\x09\x09" + archive[-24:])
    print(f"make-corpus: {count} real model caches added to {into}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = os.environ.get("DECK") or next(
        (p for p in (os.path.join(REPO, ".build", c, "deck") for c in ("release", "debug")) if os.path.exists(p)), None)
    parser.add_argument("--deck", default=default, help="the deck tool (default: %(default)s)")
    parser.add_argument(
        "--model-cache-into", metavar="DIR",
        help="only write the real stores' model caches into DIR (what Scripts/fuzz adds to a run)")
    args = parser.parse_args()
    if args.model_cache_into:
        model_cache_seeds(args.model_cache_into)
        return
    if not args.deck or not os.access(args.deck, os.X_OK):
        sys.exit("make-corpus: no deck tool; build it (swift build) or pass --deck PATH")
    manifest_seeds()
    schema_seeds()
    where_seeds()
    with tempfile.TemporaryDirectory(prefix="deck-corpus-") as scratch:
        sample, tiny, small = make_packages(args.deck, scratch)
        store_seeds(args.deck, sample, tiny, small, scratch)
        archive_seeds(args.deck, small, scratch)
    for target, files in sorted(written.items()):
        print(f"{target}: {len(files)} seeds, {sum(size for _, size in files)} bytes, largest {max(size for _, size in files)}")


if __name__ == "__main__":
    main()
