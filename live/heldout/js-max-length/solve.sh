python3 - <<'PY'
s = open("slug.js").read()
s = s.replace("function slugify(text) {\n  return text", "function slugify(text, maxLength) {\n  let slug = text")
s = s.replace(".replace(/^-+|-+$/g, '');\n}", ".replace(/^-+|-+$/g, '');\n  if (maxLength !== undefined) {\n    slug = slug.slice(0, maxLength).replace(/-+$/, '');\n  }\n  return slug;\n}")
open("slug.js", "w").write(s)
t = open("slug.test.js").read()
t += "\ntest('maxLength cuts without a trailing dash', () => {\n  assert.strictEqual(slugify('Hello World Again', 12), 'hello-world');\n  assert.strictEqual(slugify('Hello World', 5), 'hello');\n});\n"
open("slug.test.js", "w").write(t)
PY
node --test >/dev/null 2>&1
