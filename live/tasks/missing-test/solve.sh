python3 - <<'PY'
s = open("test_mathutil.py").read()
s = s.replace("from mathutil import mean", "from mathutil import clamp, mean")
s = s.replace('\n\nif __name__', '''

class ClampTest(unittest.TestCase):
    def test_below(self):
        self.assertEqual(clamp(-5, 0, 10), 0)

    def test_inside(self):
        self.assertEqual(clamp(5, 0, 10), 5)

    def test_above(self):
        self.assertEqual(clamp(15, 0, 10), 10)


if __name__''')
open("test_mathutil.py", "w").write(s)
PY
