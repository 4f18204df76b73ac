"""Stand-in for the get-pip.py that ansible-test downloads to put pip in its virtual environments.

ansible-test creates each sanity test's virtual environment without pip, then runs
``~/.ansible/test/cache/get_pip_<version>.py <options> pip==<version> --no-setuptools --no-wheel``,
a script it fetches from its own file server. Where only the package index is reachable,
hack/ansible-test.sh puts this file there instead: pip from the interpreter's own ensurepip, then
the pip version ansible-test asked for, from the package index like every other requirement.
"""

import subprocess
import sys

# Options of get-pip.py itself, not of `pip install`.
GET_PIP_OPTIONS = {"--no-setuptools", "--no-wheel"}

# ensurepip in a child process: in this one it would leave PIP_CONFIG_FILE=/dev/null behind, and the
# next pip would lose the machine's pip configuration (certificates, index).
subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True)
pip_install_args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_OPTIONS]
subprocess.run([sys.executable, "-m", "pip", "install", *pip_install_args], check=True)
