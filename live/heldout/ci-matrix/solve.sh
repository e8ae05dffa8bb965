sed -i 's/python-version: \["3.10", "3.11"\]/python-version: ["3.11", "3.12"]/' .github/workflows/test.yml
