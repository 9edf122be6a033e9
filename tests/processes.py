"""Test helper: the script text that makes a fake scheduler or engine record
its process (and a sleeping child) so a test can check none is left."""

import textwrap

RECORD = textwrap.dedent('''
    import json, os, subprocess, sys
    import psutil

    def record(env_var, spawn=True):
        """Append this process (and a sleeping child) to the JSON-lines file $env_var."""
        path = os.environ.get(env_var)
        procs = [psutil.Process()]
        if spawn:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            procs.append(psutil.Process(child.pid))
        if path:
            with open(path, "a") as f:
                for p in procs:
                    f.write(json.dumps([p.pid, p.create_time()]) + "\\n")
''')
