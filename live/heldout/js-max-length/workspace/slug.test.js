'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('./slug');

test('lower case and dashes', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});

test('punctuation collapses', () => {
  assert.strictEqual(slugify('  Rust & JavaScript: a tour!  '), 'rust-javascript-a-tour');
});
