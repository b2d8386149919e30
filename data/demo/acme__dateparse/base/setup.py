from setuptools import find_packages, setup

setup(
    name="dateparse",
    version="1.2.0",
    description="Parse the date formats people actually type",
    packages=find_packages(exclude=["tests"]),
    python_requires=">=3.6",
)
